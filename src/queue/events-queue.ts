import {
  DelayedError,
  Queue,
  UnrecoverableError,
  Worker,
  type DefaultJobOptions,
  type Job,
  type JobsOptions,
  type JobState,
  type QueueOptions,
} from "bullmq";
import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import { DEFAULTS } from "../config/defaults.js";
import { errorMessage, withHandlerStacks } from "../events/dispatch.js";
import { expectDefined } from "../errors.js";
import { type RedisClient, warnUnlessOutage } from "../redis/redis.js";
import type { WaitingEvent, EventLog, HandlerOutcomeData as Outcome, LogPosition } from "../mirror/event-log.js";
import {
  attemptOfJob,
  continuingRun,
  drawRetryDelay,
  eventBackoff,
  exponentialBackoff,
  okOutcomes,
  type AttemptResult,
  type AttemptRunner,
} from "./attempt-runner.js";
import { withTimeout } from "../base/deadline.js";
import { QueueUnavailableError, UnstorableEventError } from "./errors.js";
import { groupCommit } from "../base/group-commit.js";
import { type EdgeSinkOptions, type EnqueueInput, type EnqueueResult, type IngestedEvent } from "./ingest-stream.js";
import { edgeJobIdentity, entryJobIdentity, restoredJobIdentity } from "./job-ids.js";

// The service's BullMQ queues: their names, a job's data and options, every handle on a queue, the
// producer that adds events straight to the events queue, its worker, and the job an event
// continues as after its first attempt on the ingest stream.

/** The queue every verified webhook event lands in. */
export const EVENTS_QUEUE = "events";

/** The queue of refresh and reconcile jobs, apart from the events queue so a 429 pauses only it. */
export const SYNC_QUEUE = "sync";

/**
 * The queue of problem notifications (src/alerts), apart from the others so a destination that
 * fails or hangs holds up no event and no sync job.
 */
export const ALERTS_QUEUE = "alerts";

/** BullMQ's states of a job no worker has taken yet (a paused queue's jobs read as `waiting`). */
const NOT_STARTED: ReadonlySet<string> = new Set(["waiting", "prioritized", "delayed", "waiting-children"] satisfies JobState[]);

/**
 * A job still to run, in its two readings. Yet to start: no worker holds it, so it can be taken off
 * its queue (`remove` refuses a job whose lock a worker holds, which then runs to its end).
 */
export const jobYetToStart = (state: JobState | "unknown"): boolean => NOT_STARTED.has(state);

/** Yet to end: yet to start or running (`active`), so it still does what it was added for and another is not needed. */
export const jobYetToEnd = (state: JobState | "unknown"): boolean => state === "active" || jobYetToStart(state);

/** The data of an events queue job: the event as the edge accepted it, and where its run stands. */
export interface EventJobData extends IngestedEvent {
  /** A replay aimed at some handlers (or a retry of those that failed): only these handler keys run. */
  only?: string[];
  /** A deliberate redelivery (`replay`): a run of its own, whose first attempt starts a new run in the event log. */
  replay?: true;
  /** The bulk replay (operator API) this job belongs to: its progress counts the job once it ends. */
  bulk?: string;
  /** Attempts of its run made before this job (1: its first ran straight from the ingest stream): 0 when absent. */
  attemptsBefore?: number;
  /**
   * The event already failed for good on its first attempt (from the ingest stream), for this
   * reason: the job's own first run fails with it at once, without running or recording anything,
   * which puts the event in the failed set (the dead letter) for `replay <jobId>`.
   */
  deadLetter?: string;
  /** The stacks of the handler errors behind `deadLetter`: the dead letter's job.stacktrace. */
  deadLetterStack?: string;
  /** Handler outcomes of an earlier attempt that the event log does not hold yet: the job records them. */
  unrecorded?: Record<string, Outcome>;
}

/**
 * How many failed attempts' stacks a job keeps (BullMQ appends one per attempt): the latest few
 * say where it fails; all ten, each up to a bounded stack, would only fill Redis.
 */
export const KEPT_STACKS = 3;

/** Retries: exponential with jitter; with the defaults (10 attempts from 1 s) about 17 minutes. */
export function retryJobOptions(attempts: number, backoffMs: number): DefaultJobOptions {
  return { attempts, backoff: exponentialBackoff(backoffMs), stackTraceLimit: KEPT_STACKS };
}

/** An events queue job's retries: retryJobOptions' schedule, drawn for the attempt's record (eventBackoff). */
export function eventRetryOptions(attempts: number, backoffMs: number): DefaultJobOptions {
  return { ...retryJobOptions(attempts, backoffMs), backoff: eventBackoff(backoffMs) };
}

/** BullMQ keep-options from the config's retention (count 0 removes a job as it finishes). */
export function retentionJobOptions(retention: Config["retention"]): DefaultJobOptions {
  const keep = ({ count, ageSeconds }: { count: number; ageSeconds: number }) => (count === 0 ? true : { count, age: ageSeconds });
  return { removeOnComplete: keep(retention.completed), removeOnFail: keep(retention.failed) };
}

/**
 * The options every job of ours gets from the config: its retries (`retry`: eventRetryOptions for
 * the events queue, whose jobs' waits are drawn by the attempt) and how long it is kept.
 */
function configuredJobOptions(config: Pick<Config, "worker" | "retention">, retry = retryJobOptions): DefaultJobOptions {
  return { ...retry(config.worker.attempts, config.worker.backoffMs), ...retentionJobOptions(config.retention) };
}

/** What a handle on one of the service's queues is built from, in every process that opens one. */
export interface QueueHandleOptions {
  connection: RedisClient;
  /** QUEUE_PREFIX, and the retries and retention every job added through the handle gets. */
  config: Pick<Config, "queuePrefix" | "worker" | "retention">;
  /**
   * Where the handle's errors are reported (warnUnlessOutage: Redis being away is
   * logRedisOutages' to report). Without one they are ignored: a one-off command's calls fail on
   * their own, and an "error" event nobody listens to would throw.
   */
  logger?: Logger;
  /** bullmq-otel: a job carries the trace of the code that added it. */
  telemetry?: QueueOptions["telemetry"];
}

/**
 * Every handle on a queue of the service is built here: the prefix, the job defaults, BullMQ's own
 * event stream kept short, and an "error" listener (an unheard one would throw).
 */
function openQueue<Data>(
  name: string,
  options: Pick<QueueOptions, "prefix" | "defaultJobOptions" | "telemetry"> & { connection: RedisClient },
  onError: (err: Error) => void,
): Queue<Data> {
  // BullMQ's own event stream of the queue (what QueueEvents reads): kept short.
  return new Queue<Data>(name, { ...options, streams: { events: { maxLen: 1000 } } }).on("error", onError);
}

function queueHandle<Data>(name: string, options: QueueHandleOptions, defaultJobOptions: QueueOptions["defaultJobOptions"]): Queue<Data> {
  const { connection, config, logger, telemetry } = options;
  return openQueue<Data>(
    name,
    { connection, prefix: config.queuePrefix, defaultJobOptions, ...(telemetry ? { telemetry } : {}) },
    logger ? warnUnlessOutage(logger, `${name} queue error`) : () => undefined,
  );
}

/** The events queue: retries, dead letters, replays, change events and stream entries moved on. */
export function createEventsQueue(options: QueueHandleOptions): Queue<EventJobData> {
  return queueHandle<EventJobData>(EVENTS_QUEUE, options, configuredJobOptions(options.config, eventRetryOptions));
}

/** The sync queue: refresh, reconcile and operator jobs, apart so a 429 pauses only it. */
export function createSyncQueue<Data = Record<string, unknown>>(options: QueueHandleOptions): Queue<Data> {
  return queueHandle<Data>(SYNC_QUEUE, options, {
    ...configuredJobOptions(options.config),
    // A finished sync job leaves nothing worth keeping; its outcome is logged.
    removeOnComplete: true,
  });
}

/** The alerts queue, with the job options its notifications are kept and retried by (alerts/alerts.ts). */
export function createAlertsQueue<Data>(
  options: Pick<QueueHandleOptions, "connection" | "logger"> & { prefix: string; defaultJobOptions: DefaultJobOptions },
): Queue<Data> {
  const { connection, prefix, defaultJobOptions, logger } = options;
  return openQueue<Data>(
    ALERTS_QUEUE,
    { connection, prefix, defaultJobOptions },
    logger ? warnUnlessOutage(logger, `${ALERTS_QUEUE} queue error`) : () => undefined,
  );
}

export interface EventProducerOptions extends EdgeSinkOptions {
  queueName?: string;
  jobOptions?: DefaultJobOptions;
  /** Connection errors of the queue (BullMQ emits them; an unheard "error" would crash the process). */
  onError?: (err: Error) => void;
}

export type EventProducer = ReturnType<typeof createEventProducer>;

/**
 * Enqueues verified events into BullMQ, once per event id within the deduplication window.
 * BullMQ's throttle-mode deduplication (`{ id, ttl }`) is atomic with the add and keeps its key
 * for the whole ttl even after the job is removed, so a redelivery is dropped whether the first
 * copy is waiting, running or long finished — and an event is only marked seen once it is
 * durably enqueued. Each add carries a fresh job id: when Redis answers with another id, the
 * event was a duplicate. Two duplicates in one batch are still one job: addBulk sends the batch as
 * one pipeline whose add scripts Redis runs in order, and the second sees the first's key.
 */
export function createEventProducer(options: EventProducerOptions) {
  const queue = openQueue<EventJobData>(
    options.queueName ?? EVENTS_QUEUE,
    {
      connection: options.connection,
      prefix: options.prefix,
      defaultJobOptions: { ...eventRetryOptions(DEFAULTS.jobAttempts, DEFAULTS.jobBackoffMs), ...options.jobOptions },
    },
    // A failed add still fails its own caller.
    options.onError ?? (() => undefined),
  );
  const ttl = options.dedupWindowSeconds * 1000;
  // Each event is serialised alone before it joins a batch: one that cannot be (too deep, a
  // cycle, a BigInt) fails its own caller with a 4xx, never the whole batch with a 503.
  // Concurrent requests share one addBulk (one pipelined round trip); each still answers only
  // once Redis has acknowledged the batch holding its event.
  const add = groupCommit(
    (events: EnqueueInput[]) =>
      // The job holds the parsed payload; the body text a caller may pass is not stored twice.
      queue.addBulk(
        events.map(({ payloadJson: _text, ...event }) => ({
          name: event.type,
          data: event,
          opts: edgeJobIdentity(event.id, ttl),
        })),
      ),
    options.maxBatch ?? 256,
    { ms: options.timeoutMs, what: "enqueue", Unavailable: QueueUnavailableError },
  );

  return {
    queue,
    async enqueue(event: EnqueueInput): Promise<EnqueueResult> {
      assertStorable(event);
      const job = await add(event);
      const jobId = expectDefined(job.opts.jobId, "addBulk returned a job without the jobId it was given");
      return { jobId: job.id ?? jobId, duplicate: job.id !== undefined && job.id !== jobId };
    },
    async ping() {
      await withTimeout(options.connection.ping(), options.timeoutMs, "ping", QueueUnavailableError);
    },
    async close() {
      await queue.close();
    },
  };
}

/** Throws UnstorableEventError when BullMQ could not serialise the event (it JSON.stringifies data). */
function assertStorable(event: EventJobData): void {
  try {
    JSON.stringify(event);
  } catch (err) {
    throw new UnstorableEventError(`event ${event.id} cannot be stored: ${(err as Error).message}`, { cause: err });
  }
}

export interface EventWorkerOptions {
  /** A "worker" connection (maxRetriesPerRequest: null). */
  connection: RedisClient;
  prefix: string;
  /** Runs each attempt (deadline, dispatch, record, verdict): the stream consumer's too. */
  runner: AttemptRunner;
  concurrency: number;
  /** Lock duration and stalled-check interval; a crashed worker's jobs rerun after it. */
  lockMs?: number;
  maxStalls?: number;
  logger: Logger;
  /** How long a job whose attempt the log could not take before a stop waits before it runs again (default 1000). */
  heldRetryMs?: number;
}

/** BullMQ's reason for a job failed once it stalled more than `maxStalledCount` times. */
const STALLED_TOO_OFTEN = "job stalled more than allowable limit";

interface Progress {
  done?: string[];
  /**
   * Outcomes of handlers in `done` that no recorded attempt holds yet (their attempt's record
   * did not land before a stop, or its worker died): the next attempt records them, since it does
   * not run them again.
   */
  unrecorded?: Record<string, Outcome>;
}

/**
 * The events queue's side of delivery: retries, replays, change events and stream entries moved
 * here. Each job is one attempt of the runner; this decides only where the next attempt comes
 * from: BullMQ's retry with backoff (a retryable failure throws), its failed set (a failure for
 * good throws UnrecoverableError), and the job's progress, which keeps the handlers that
 * succeeded so a retry re-runs only those that failed.
 */
export function createEventWorker(options: EventWorkerOptions): Worker<EventJobData> {
  const { runner, logger, maxStalls = DEFAULTS.jobMaxStalls } = options;
  // The wait each retried attempt drew and recorded, by the error the job fails with: BullMQ asks
  // the strategy below for the wait as it fails the job (its backoff is eventBackoff's custom type).
  const drawn = new WeakMap<Error, number>();

  const worker: Worker<EventJobData> = new Worker<EventJobData>(EVENTS_QUEUE, (job, token) => runJob(job, token), {
    connection: options.connection,
    prefix: options.prefix,
    concurrency: options.concurrency,
    autorun: false,
    ...(options.lockMs ? { lockDuration: options.lockMs, stalledInterval: options.lockMs } : {}),
    // BullMQ would fail a job that stalled too often before any code of ours runs, so unrecorded:
    // its own limit is out of reach, and runJob fails the job at `maxStalls` after recording it.
    maxStalledCount: Number.MAX_SAFE_INTEGER,
    settings: {
      // Any other failure of a job (Redis away while saving its progress) waits what BullMQ's
      // exponential backoff draws for the attempt's number.
      backoffStrategy: (_made, _type, err, job) =>
        (err && drawn.get(err)) ?? (job ? drawRetryDelay(job.opts.backoff, attemptOfJob(job).number) : undefined) ?? 0,
    },
  });
  worker.on("error", warnUnlessOutage(logger, "event worker error"));
  return worker;

  async function runJob(job: Job<EventJobData>, token: string | undefined) {
    // Placed by a consumer after the log recorded the event as failed: nothing to record.
    if (isDeadLetterPlacement(job)) throw withHandlerStacks(new UnrecoverableError(job.data.deadLetter ?? ""), job.data.deadLetterStack);
    const { data } = job;
    const { number, of, newRound } = attemptOfJob(job);
    const progress = (job.progress && typeof job.progress === "object" ? job.progress : {}) as Progress;
    // Outcomes the job was created with (its attempt from the stream could not record them)
    // count until an attempt of the job saved progress of its own.
    const carried = progress.done ? progress.unrecorded : data.unrecorded;
    const done = new Set(progress.done ?? []);
    const keys = runner.handlerKeys(data.type);
    // A replay aimed at some handlers counts every other one as done already.
    if (data.only) for (const key of keys) if (!data.only.includes(key)) done.add(key);
    // A success is saved in the job's progress only while another handler of this run may still
    // fail: the last one to succeed when all others did completes the job instead (one Redis
    // script fewer per job, a third of the worker's Redis work with a single handler).
    const pending = keys.filter((k) => !done.has(k)).length;
    let succeeded = 0;
    let saved = carried !== undefined && Object.keys(carried).length > 0;
    const result = await runner.run({
      data,
      number,
      of,
      backoff: job.opts.backoff,
      done,
      carried,
      newRound,
      // A worker died on this job `maxStalls` times: fail it for good, recorded first.
      ...(job.stalledCounter > maxStalls ? { giveUp: STALLED_TOO_OFTEN } : {}),
      onSuccess: async (key, outcomes) => {
        done.add(key);
        if (++succeeded === pending) return;
        saved = true;
        await job.updateProgress({ done: [...done], unrecorded: okOutcomes(outcomes) } satisfies Progress);
      },
      stopping: () => worker.closing !== undefined,
      job: job.id,
      logger: logger.child({ eventId: data.id, eventType: data.type, jobId: job.id, attempt: number }),
    });
    switch (result.outcome) {
      case "completed":
      case "duplicate":
        return { handled: done.size };
      case "dropped":
        return { dropped: "its account was removed (or added again) since the event arrived" };
      case "unrecorded":
        // Stopping while the log is away: the job waits, its successes carried, no attempt spent.
        for (const key of Object.keys(result.ok)) done.add(key);
        await job.updateProgress({ done: [...done], unrecorded: result.ok } satisfies Progress);
        await job.moveToDelayed(Date.now() + (options.heldRetryMs ?? 1000), token);
        throw new DelayedError();
      case "retried":
        // Recorded now: the retry must not record these outcomes a second time (if this save fails,
        // a handler's attempts may count one too many, never one too few).
        if (saved)
          await job
            .updateProgress({ done: [...done] } satisfies Progress)
            .catch((err: unknown) =>
              logger.warn({ jobId: job.id, err: errorMessage(err) }, "could not clear the recorded outcomes from the job's progress"),
            );
        // The attempt drew the wait from BullMQ's backoff and recorded it as the next retry's time:
        // the worker's backoff strategy hands BullMQ that very wait as the throw fails the job.
        if (result.retryDelayMs !== undefined) drawn.set(result.error, result.retryDelayMs);
        throw result.error;
      case "failed":
        throw result.error;
    }
  }
}

/**
 * A job that only places an event that already failed for good into the failed set (see
 * EventJobData.deadLetter): true until it ran once, so a replay of it runs the handlers.
 */
export function isDeadLetterPlacement(job: { data: EventJobData; attemptsMade: number }, ran = false): boolean {
  return job.data.deadLetter !== undefined && job.attemptsMade === (ran ? 1 : 0);
}

/** An events queue job that carries an event on after its first attempt. */
export interface ContinuationJob {
  name: string;
  data: EventJobData;
  opts: JobsOptions;
}

export interface ContinuationOptions {
  attempts: number;
  backoffMs: number;
  dedupTtlMs: number;
  /** The keys of every handler of the event's type (the registry's). */
  handlerKeys(type: string): string[];
}

/**
 * Where the next attempt of an event comes from after its first attempt on the stream: the
 * events queue, as
 * - a retry of the handlers that failed, with the rest of the backoff (`retried`);
 * - a dead letter: a job that fails at once with the reason, for `replay`, which runs the
 *   handlers that failed, or every handler when none ran (`failed`);
 * - a job that runs the handlers that did not succeed and records the outcomes of those that did,
 *   which it carries (`unrecorded`: the consumer stopped while the log was away);
 * and none otherwise. Each job carries the entry's identity (entryJobIdentity), so a consumer
 * that dies after adding it and before acknowledging the entry adds nothing twice.
 */
export function continuationOf(
  entryId: string,
  data: EventJobData,
  result: AttemptResult,
  options: ContinuationOptions,
): ContinuationJob | undefined {
  // A retry waits what its attempt recorded as the next retry's time.
  const firstDelayMs = result.outcome === "retried" ? result.retryDelayMs : undefined;
  const job = (only: string[] | undefined, extra: Pick<EventJobData, "unrecorded" | "deadLetter" | "deadLetterStack"> = {}) => ({
    name: data.type,
    data: { ...data, ...(only ? { only } : {}), attemptsBefore: 1, ...extra },
    opts: {
      ...(extra.deadLetter !== undefined
        ? { attempts: 1 }
        : options.attempts <= 1
          ? { attempts: 1, delay: options.backoffMs }
          : {
              // The rest of the run (attemptOfJob numbers the job's attempts on from the stream's),
              // each retry's wait drawn for its number in the run; the first as attempt 1 drew it.
              attempts: options.attempts - 1,
              delay: firstDelayMs ?? drawRetryDelay(eventBackoff(options.backoffMs), 1),
              backoff: eventBackoff(options.backoffMs),
            }),
      ...entryJobIdentity(entryId, options.dedupTtlMs),
    },
  });
  switch (result.outcome) {
    case "retried":
      return job(result.retry);
    case "failed":
      // An empty `only` would replay as a no-op recorded `handled`.
      return job(result.failed.length > 0 ? result.failed : undefined, {
        deadLetter: result.error.message,
        ...(result.stacks ? { deadLetterStack: result.stacks } : {}),
      });
    case "unrecorded":
      return job(
        options.handlerKeys(data.type).filter((k) => result.ok[k] === undefined),
        { unrecorded: result.ok },
      );
    default:
      return undefined;
  }
}

/** Waiting events read from the log per page of a restore pass. */
export const RESTORE_PAGE = 500;

/**
 * Waiting events one restore pass looks at, at most: what a pass adds to Redis and reads from the
 * log stays bounded; any further are left to the next pass (the next start, or Redis found
 * emptied again), and the pass says so.
 */
export const RESTORE_MAX_PER_PASS = 10_000;

/** JOB_ATTEMPTS (a run whose `of` the log does not hold), JOB_BACKOFF_MS, and the deduplication window. */
export interface RestoreOptions extends Omit<ContinuationOptions, "handlerKeys"> {
  /** The default company's part of the log. */
  log: Pick<EventLog, "waiting">;
  /** Each registered account's part of the log (accounts.ts); a pass looks at every one after the default's. */
  accountLogs?: () => Promise<{ account: string; log: Pick<EventLog, "waiting"> }[]>;
  queue: Queue<EventJobData>;
  /** The queue's Redis: whether a job exists is one EXISTS on its key. */
  connection: RedisClient;
  /** Told how many jobs a pass added (the metric). */
  onRestored(count: number): void;
  logger: Logger;
}

/**
 * The job an event the log holds as waiting waits in, made again from the log: the same job id as
 * the one its latest attempt recorded (so adding it while that job exists adds nothing), the
 * handlers that failed, the run numbered on from its latest attempt (continuingRun), and due at the
 * recorded retry time, or now when that has passed (its id: job-ids.ts restoredJobIdentity).
 */
export function restoredJob(
  event: WaitingEvent,
  options: Omit<ContinuationOptions, "handlerKeys">,
  now: number,
  account?: string,
): ContinuationJob {
  const { jobId, deduplication } = restoredJobIdentity(event, account, options.dedupTtlMs);
  const run = continuingRun(event.attempt?.number ?? 1, event.attempt?.of ?? options.attempts);
  return {
    name: event.type,
    data: {
      id: event.id,
      type: event.type,
      receivedAt: event.receivedAt.toISOString(),
      payload: event.payload as Record<string, unknown>,
      ...(account === undefined ? {} : { account }),
      ...(event.retry.length > 0 ? { only: event.retry } : {}),
      ...run.data,
    },
    opts: {
      jobId,
      attempts: run.attempts,
      delay: Math.max(0, (event.nextRetryAt?.getTime() ?? now) - now),
      backoff: eventBackoff(options.backoffMs),
      deduplication,
    },
  };
}

/**
 * Queue state heals from the event log: every event the log holds as waiting for a retry whose
 * job Redis no longer holds (Redis restarted without its data, FLUSHALL, a failover to an empty
 * replica) is enqueued again (restoredJob), page by page. Idempotent: each job keeps its id, so a
 * job that exists, or that another worker restoring at the same time added first, is not added
 * twice. A pass looks at `maxPerPass` events at most; one that stops there leaves its place, and
 * the next pass goes on from it (then from the log's start), so every waiting event is looked at.
 */
export function createJobRestorer(options: RestoreOptions) {
  const { queue, connection, logger } = options;
  /** Where the last pass stopped at its cap, per part of the log ("" the default's). */
  const resume = new Map<string, LogPosition>();

  /** Adds the jobs of one page's events that Redis does not hold; returns how many. */
  async function restorePage(page: WaitingEvent[], account: string | undefined): Promise<number> {
    const now = Date.now();
    const jobs = page.map((event) => restoredJob(event, options, now, account));
    const held = await Promise.all(jobs.map((job) => connection.exists(queue.toKey(job.opts.jobId ?? ""))));
    const missing = jobs.filter((_, i) => held[i] === 0);
    if (missing.length > 0) await queue.addBulk(missing);
    return missing.length;
  }

  /** One part of the log, looking at `budget` events at most; how many it restored. */
  async function passOver(log: Pick<EventLog, "waiting">, account: string | undefined, budget: number) {
    const key = account ?? "";
    let after = resume.get(key);
    // Started from the log's start: reaching its end is the whole log looked at.
    let fromStart = after === undefined;
    let seen = 0;
    let restored = 0;
    for (;;) {
      if (seen >= budget) {
        if (after) resume.set(key, after);
        else resume.delete(key);
        logger.warn({ looked: seen }, "more events wait for a retry than one restore pass looks at; the next pass goes on from here");
        break;
      }
      const asked = Math.min(RESTORE_PAGE, budget - seen);
      const page = await log.waiting(after, asked);
      seen += page.length;
      restored += await restorePage(page, account);
      const last = page.at(-1);
      after = last && { receivedAt: last.receivedAt, id: last.id };
      if (page.length === asked) continue;
      if (fromStart) {
        resume.delete(key);
        break;
      }
      // Past the end of the log: on from its start, within the same cap.
      fromStart = true;
      after = undefined;
    }
    return restored;
  }

  return {
    /** One pass over the default's part of the log, then each registered account's; returns how many jobs were missing and added. */
    async pass(): Promise<number> {
      const parts = [{ account: undefined as string | undefined, log: options.log }, ...((await options.accountLogs?.()) ?? [])];
      // Each part looks at its share of the cap, so one company's long backlog never starves another's.
      const share = Math.ceil(RESTORE_MAX_PER_PASS / parts.length);
      let restored = 0;
      for (const part of parts) restored += await passOver(part.log, part.account, share);
      if (restored > 0) {
        options.onRestored(restored);
        logger.info({ restored }, "events waiting for a retry that no job held were enqueued again from the event log");
      }
      return restored;
    },
  };
}
