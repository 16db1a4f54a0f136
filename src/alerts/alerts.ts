// Problem notifications, delivered durably: `announce` puts one job per destination on the alerts
// queue (BullMQ, so a restart loses none), and the alerts worker POSTs each, signed, retried with
// BullMQ's exponential backoff a bounded number of times. A destination that fails or hangs holds
// only the alerts worker's few slots, each for at most one POST's timeout: events and sync jobs
// run on queues and workers of their own, and `announce` awaits nothing but the add.
import { type DefaultJobOptions, type Job, type Queue, Worker } from "bullmq";
import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import { DEFAULT_ACCOUNT } from "../config/defaults.js";
import type { AnnounceTransition, ProblemTransition } from "../problems/problem.js";
import { exponentialBackoff } from "../queue/attempt-runner.js";
import { withTimeout } from "../base/deadline.js";
import { ALERTS_QUEUE, createAlertsQueue } from "../queue/events-queue.js";
import { alertJobId } from "../queue/job-ids.js";
import { type RedisClient, warnUnlessOutage } from "../redis/redis.js";
import { alertMessage, testTransition, type AlertStyle } from "./alert-message.js";
import { ALERT_TIMEOUT_MS, describeAnswer, postAlert, type AlertAnswer } from "./alert-post.js";
import { AlertDeliveryError } from "./errors.js";

/** Where notifications go and how they are written (ALERT_WEBHOOK_URL, ALERT_SIGNING_SECRET, ALERT_FORMAT). */
export type AlertSettings = Config["alerts"];

/**
 * Attempts per notification and destination, and the first retry's wait (doubling, with jitter):
 * 20 s, 40 s … 85 min, about 2 h 50 min from the first attempt to the last. Long enough to
 * outlast a receiver's deploy or a short outage, short enough that a notification given up on
 * still says something current; the error line at the end says it was given up.
 */
export const ALERT_ATTEMPTS = 10;
export const ALERT_BACKOFF_MS = 20_000;

/**
 * POSTs in flight at once per worker process. Few: notifications are rare, and each slot a
 * hanging destination holds is held for one timeout at most; more than one, so a destination
 * that hangs leaves the others a slot.
 */
export const ALERT_CONCURRENCY = 4;

/**
 * How long a delivered notification's job is kept: while it exists, announcing the same
 * transition again (the problem store after a restart that came before it recorded the
 * announcement, two processes seeing one transition) adds nothing, since BullMQ ignores a job id
 * it holds, in any state. A week outlasts any restart; the count bounds Redis's memory if problems
 * flap.
 */
const KEPT_DELIVERED = { age: 7 * 24 * 3600, count: 10_000 };
/** Given-up notifications, kept for the same reason and for inspection in the queue's failed set. */
const KEPT_GIVEN_UP = { age: 14 * 24 * 3600, count: 1000 };

/** One notification to one destination: the deployment's URL, or `account`'s own (its alertUrl). */
export interface AlertJobData {
  transition: ProblemTransition;
  account?: string;
}

export interface AlertsOptions {
  /** For the queue's adds: any connection (a web one fails fast while Redis is away). */
  connection: RedisClient;
  /** QUEUE_PREFIX (config.queuePrefix). */
  prefix: string;
  settings: AlertSettings;
  /** An account's own alert URL (accounts.ts), read as each notification is sent; undefined when it has none. */
  alertUrlOf(account: string): string | undefined | Promise<string | undefined>;
  logger: Logger;
  /** How long `announce` waits for Redis to take the jobs (ENQUEUE_TIMEOUT_MS). */
  enqueueTimeoutMs: number;
  /** @defaultValue ALERT_ATTEMPTS */
  attempts?: number;
  /** @defaultValue ALERT_BACKOFF_MS */
  backoffMs?: number;
  /** One POST's limit, body included. @defaultValue ALERT_TIMEOUT_MS */
  timeoutMs?: number;
}

/** The alerts: `announce` for the problem store, the delivery worker for the worker role. */
export function createAlerts(options: AlertsOptions) {
  const { settings, logger, timeoutMs = ALERT_TIMEOUT_MS } = options;
  const defaultJobOptions: DefaultJobOptions = {
    attempts: options.attempts ?? ALERT_ATTEMPTS,
    backoff: exponentialBackoff(options.backoffMs ?? ALERT_BACKOFF_MS),
    removeOnComplete: KEPT_DELIVERED,
    removeOnFail: KEPT_GIVEN_UP,
  };
  const queue: Queue<AlertJobData> = createAlertsQueue<AlertJobData>({ ...options, defaultJobOptions });
  const style = styleOf(settings);

  /** Sends one job's notification; a failure is one line and a throw (BullMQ retries it, or keeps it as failed). */
  async function deliver(job: Job<AlertJobData>): Promise<{ status: number } | { skipped: string }> {
    const { transition, account } = job.data;
    const url = account === undefined ? settings.webhookUrl : await options.alertUrlOf(account);
    // Unset since it was queued (or the account has no URL of its own): nobody to tell.
    if (!url) return { skipped: account === undefined ? "ALERT_WEBHOOK_URL is not set" : `account ${account} has no alertUrl` };
    const answer = await postAlert(url, alertMessage(transition, style, Math.floor(Date.now() / 1000)), timeoutMs);
    if (answer.ok && answer.status !== undefined) return { status: answer.status };
    const attempt = job.attemptsMade + 1;
    const of = job.opts.attempts ?? 1;
    const line = {
      destination: answer.destination,
      ...(answer.status === undefined ? { err: answer.error } : { status: answer.status }),
      attempt: `${attempt} of ${of}`,
      webhookId: transition.id,
      type: transition.type,
      kind: transition.problem.kind,
      ...(transition.problem.account === null ? {} : { account: transition.problem.account }),
    };
    if (attempt >= of) logger.error(line, `alert not delivered to ${answer.destination}: given up after ${of} attempts`);
    else logger.warn(line, `alert delivery to ${answer.destination} failed, will retry`);
    // The job's failed reason: the host and the answer, never the URL.
    throw new AlertDeliveryError(describeAnswer(answer));
  }

  return {
    queue,
    /**
     * Queues `transition` for every destination it goes to: the deployment's URL when set, and its
     * account's own URL (looked up when it is sent). Resolves once Redis holds the jobs; the same
     * transition id announced again adds nothing while its jobs are kept (a week). Rejects when
     * Redis does not take them within ENQUEUE_TIMEOUT_MS: the caller keeps the transition and
     * announces it again.
     */
    announce: (async (transition) => {
      const jobs = destinationsOf(transition, settings).map((account) => ({
        name: transition.type,
        data: { transition, ...(account === undefined ? {} : { account }) },
        opts: { jobId: alertJobId(transition.id, account) },
      }));
      if (jobs.length > 0) await withTimeout(queue.addBulk(jobs), options.enqueueTimeoutMs, "queueing a problem notification");
    }) satisfies AnnounceTransition,
    /** The worker that sends the queue's notifications, on a worker connection; not running until `run()` (the worker role's lifecycle runs and closes it). */
    deliveryWorker(connection: RedisClient): Worker<AlertJobData> {
      const worker = new Worker<AlertJobData>(ALERTS_QUEUE, deliver, {
        connection,
        prefix: options.prefix,
        concurrency: ALERT_CONCURRENCY,
        autorun: false,
      });
      worker.on("error", warnUnlessOutage(logger, "alerts worker error"));
      return worker;
    },
  };
}

/** The destinations of a transition: undefined for the deployment's URL, an account id for that account's own. */
function destinationsOf(transition: ProblemTransition, settings: AlertSettings): (string | undefined)[] {
  const { account } = transition.problem;
  // `default` is the env-configured company: its notifications go to the deployment's URL only.
  const own = account !== null && account !== DEFAULT_ACCOUNT ? [account] : [];
  return [...(settings.webhookUrl ? [undefined] : []), ...own];
}

/** How the settings write a notification: the format, and the secret when there is one. */
const styleOf = (settings: AlertSettings): AlertStyle => ({
  format: settings.format,
  ...(settings.signingSecret ? { signingSecret: settings.signingSecret } : {}),
});

/** What `alerts test` found: the destination's answer and the id the test notification carried. */
export interface TestAlertResult {
  webhookId: string;
  type: ProblemTransition["type"];
  answer: AlertAnswer;
}

/** Sends one test notification (testTransition) to ALERT_WEBHOOK_URL, signed and written as every other; undefined when it is unset. */
export async function sendTestAlert(settings: AlertSettings, timeoutMs = ALERT_TIMEOUT_MS): Promise<TestAlertResult | undefined> {
  if (!settings.webhookUrl) return undefined;
  const transition = testTransition();
  const style = styleOf(settings);
  const answer = await postAlert(settings.webhookUrl, alertMessage(transition, style, Math.floor(Date.now() / 1000), true), timeoutMs);
  return { webhookId: transition.id, type: transition.type, answer };
}
