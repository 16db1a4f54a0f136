import { DEFAULTS } from "../config/defaults.js";
import { DelayedError, UnrecoverableError, Worker, type Job } from "bullmq";
import type { RedisClient } from "../redis/connection.js";
import type { Logger } from "pino";
import { EventDataError, type AnyEvent } from "../events/catalog.js";
import { dispatchEvent, errorMessage, failedOutcome, failureSummary, handlerStacks, withHandlerStacks } from "../events/dispatch.js";
import { startHandlerDeadline } from "../events/handler-deadline.js";
import type { HandlerRegistry } from "../events/registry.js";
import type { EventJobData, HandlerOutcomeData as Outcome } from "./event-job.js";
import { isRefusedAttempt, type EventJournal } from "./event-journal.js";
import { EVENTS_QUEUE } from "./names.js";
import { withCarriedTrace } from "../tracing/trace-context.js";

export interface EventWorkerOptions<Ctx> {
  /** A "worker" connection (maxRetriesPerRequest: null). */
  connection: RedisClient;
  prefix: string;
  queueName?: string;
  registry: HandlerRegistry<Ctx>;
  concurrency: number;
  /** Lock duration and stalled-check interval; a crashed worker's jobs rerun after it. */
  lockMs?: number;
  maxStalls?: number;
  logger: Logger;
  /** `attempt` is 1 on an event's first run, 2 on its first retry, …; `signal` aborts at the deadline. */
  makeContext(event: AnyEvent, attempt: number, logger: Logger, signal: AbortSignal): Ctx;
  /** How long an attempt's handlers may run (HANDLER_TIMEOUT_MS); past it they fail, retryably. 0 or unset: no deadline. */
  handlerTimeoutMs?: number;
  /** Errors that no retry can fix (a 4xx from the API other than 429). */
  isPermanent?(err: unknown): boolean;
  /** The event log: every event taken and each handler's outcome. */
  journal?: EventJournal;
  /**
   * While the log cannot record an attempt, its job waits this long (doubling per refusal, up to
   * 60 s) and runs again without spending an attempt (default 1000).
   */
  recordRetryMs?: number;
}

/** The most a job waits for the event log to take its attempt before it asks again. */
const MAX_RECORD_RETRY_MS = 60_000;

/** BullMQ's reason for a job failed once it stalled more than `maxStalledCount` times. */
export const STALLED_TOO_OFTEN = "job stalled more than allowable limit";

/**
 * The event log could not take an attempt for a reason that is not the event's (the database is
 * away, its disk is full): the job is put back, unrecorded outcomes saved, and asks again later.
 */
class UnrecordedAttemptError extends Error {
  readonly code = "unrecorded_attempt";
  constructor(
    readonly outcomes: Record<string, Outcome>,
    readonly done: string[],
    options: { cause: unknown },
  ) {
    super(`the event log did not record the attempt: ${errorMessage(options.cause)}`, options);
    this.name = "UnrecordedAttemptError";
  }
}

interface Progress {
  done?: string[];
  /**
   * Outcomes of handlers in `done` that no recorded attempt holds yet (their attempt's record
   * failed, or its worker died): the next attempt records them, since it does not run them again.
   */
  unrecorded?: Record<string, Outcome>;
}

/**
 * Runs the registry's handlers for each event job. Every handler runs even when another fails;
 * the keys of those that succeeded are kept in the job's progress, so a retry re-runs only the
 * ones that failed. A job fails for good (no retry) when every failure is permanent.
 */
export function createEventWorker<Ctx>(options: EventWorkerOptions<Ctx>): Worker<EventJobData> {
  const { registry, logger, journal } = options;
  const permanent = (err: unknown) => isPermanentFailure(err, options);

  const maxStalls = options.maxStalls ?? DEFAULTS.jobMaxStalls;
  const recordRetryMs = options.recordRetryMs ?? 1000;
  // Refusals per job (for its backoff and for logging once), until the log takes the attempt.
  const refusals = new Map<string, number>();

  /**
   * Puts a job whose attempt the log refused back in the delayed set, without spending an attempt
   * (BullMQ's moveToDelayed + DelayedError): an event never reaches the failed set, where
   * KEEP_FAILED_JOBS trims it, unless the log holds it. The outcomes of the handlers that
   * succeeded travel in its progress, so the next run records them instead of running them again.
   */
  const deferUnrecorded = async (job: Job<EventJobData>, token: string | undefined, err: UnrecordedAttemptError): Promise<never> => {
    const key = job.id ?? "";
    const n = (refusals.get(key) ?? 0) + 1;
    refusals.set(key, n);
    if (n === 1)
      logger.warn(
        { eventId: job.data.id, jobId: job.id, err: errorMessage(err.cause) },
        "could not record the event's attempt; it waits in the queue until the event log takes it",
      );
    const ok = Object.fromEntries(Object.entries(err.outcomes).filter(([, o]) => o.status === "ok"));
    await job.updateProgress({ done: err.done, unrecorded: ok } satisfies Progress);
    await job.moveToDelayed(Date.now() + Math.min(recordRetryMs * 2 ** (n - 1), MAX_RECORD_RETRY_MS), token);
    throw new DelayedError();
  };

  const worker = new Worker<EventJobData>(
    options.queueName ?? EVENTS_QUEUE,
    async function processEvent(job, token) {
      try {
        const result = await runJob(job);
        refusals.delete(job.id ?? "");
        return result;
      } catch (err) {
        if (err instanceof UnrecordedAttemptError) return deferUnrecorded(job, token, err);
        refusals.delete(job.id ?? "");
        throw err;
      }
    },
    {
      connection: options.connection,
      prefix: options.prefix,
      concurrency: options.concurrency,
      autorun: false,
      ...(options.lockMs ? { lockDuration: options.lockMs, stalledInterval: options.lockMs } : {}),
      // BullMQ would fail a job that stalled too often before any code of ours runs, so unrecorded:
      // its own limit is out of reach, and runJob fails the job at `maxStalls` after recording it.
      maxStalledCount: Number.MAX_SAFE_INTEGER,
    },
  );
  worker.on("error", (err) => logger.warn({ err: err.message }, "event worker error"));
  return worker;

  async function runJob(job: Job<EventJobData>) {
    // Placed by a consumer after the log recorded the event as failed: nothing to record.
    if (isDeadLetterPlacement(job)) throw withHandlerStacks(new UnrecoverableError(job.data.deadLetter ?? ""), job.data.deadLetterStack);
    const event: AnyEvent = { ...job.data.payload, id: job.data.id, type: job.data.type };
    // A dead letter's placement (its first run) ran no handler: it is not an attempt.
    const attempt = (job.data.attemptsBefore ?? 0) + job.attemptsMade + 1 - (job.data.deadLetter === undefined ? 0 : 1);
    const log = logger.child({ eventId: event.id, eventType: event.type, jobId: job.id, attempt });
    const progress = (job.progress && typeof job.progress === "object" ? job.progress : {}) as Progress;
    // Outcomes the job was created with (its attempt from the stream could not record them)
    // count until an attempt of the job saved progress of its own.
    const unrecorded = progress.done ? progress.unrecorded : job.data.unrecorded;
    const done = new Set(progress.done ?? []);
    // A replay aimed at some handlers counts every other one as done already.
    if (job.data.only) for (const h of registry.handlersFor(event.type)) if (!job.data.only.includes(h.key)) done.add(h.key);
    const final = () => job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    // The attempt is recorded once, when it ends (one upsert, group-committed with the attempts
    // that end alongside). Its failure fails the attempt, so the job retries: nothing is handled
    // unrecorded.
    const outcomes: Record<string, Outcome> = { ...unrecorded };
    let unrecordedSaved = Object.keys(outcomes).length > 0;
    // A replay's first run, or a failed job retried by hand (it already spent its attempts).
    const newRound = (job.data.replay === true && job.attemptsMade === 0) || job.attemptsMade >= (job.opts.attempts ?? 1);
    const record = async (status: "received" | "handled" | "failed") => {
      try {
        await journal?.recordAttempt({ id: event.id, type: event.type, payload: job.data.payload, status, handlers: outcomes, newRound });
      } catch (err) {
        // The event's own fault (it can never be stored) fails the attempt as any error does.
        if (isRefusedAttempt(err)) throw err;
        throw new UnrecordedAttemptError(outcomes, [...done], { cause: err });
      }
    };
    // A worker died on this job `maxStalls` times: fail it for good, recorded first.
    if (job.stalledCounter > maxStalls) {
      await record("failed");
      throw new UnrecoverableError(STALLED_TOO_OFTEN);
    }
    // A success is saved in the job's progress only while another handler of this run may still
    // fail: the last one to succeed when all others did completes the job instead (one Redis
    // script fewer per job, a third of the worker's Redis work with a single handler).
    const pending = registry.handlersFor(event.type).filter((h) => !done.has(h.key)).length;
    let succeeded = 0;
    const deadline = startHandlerDeadline(options.handlerTimeoutMs ?? 0);
    let result;
    try {
      const ctx = options.makeContext(event, attempt, log, deadline.signal);
      const onSuccess = async (key: string) => {
        done.add(key);
        outcomes[key] = { status: "ok" };
        if (++succeeded === pending) return;
        unrecordedSaved = true;
        await job.updateProgress({ done: [...done], unrecorded: { ...outcomes } } satisfies Progress);
      };
      // Retries and replays join the delivery's trace when its event carries one (tracing on).
      result = await withCarriedTrace(job.data.traceparent, () => dispatchEvent(registry, event, ctx, done, onSuccess, deadline.signal));
    } finally {
      deadline.clear();
    }
    for (const u of result.unsaved)
      log.warn({ handler: u.key, err: errorMessage(u.error) }, "handler succeeded but its progress was not saved: a retry runs it again");
    if (result.failures.length === 0) {
      await record("handled");
      return { handled: done.size };
    }
    for (const f of result.failures) {
      log.warn({ handler: f.key, err: errorMessage(f.error) }, "handler failed");
      outcomes[f.key] = failedOutcome(f.error);
    }
    const summary = failureSummary(result.failures);
    const givingUp = result.failures.every((f) => permanent(f.error));
    const retrying = !givingUp && !final();
    await record(retrying ? "received" : "failed");
    // Recorded now: the retry must not record these outcomes a second time (if this save fails,
    // a handler's attempts may count one too many, never one too few).
    if (retrying && unrecordedSaved)
      await job
        .updateProgress({ done: [...done] } satisfies Progress)
        .catch((err: unknown) => log.warn({ err: errorMessage(err) }, "could not clear the recorded outcomes from the job's progress"));
    // The job's stacktrace (the dashboard's) shows where each handler failed, not this throw.
    const stacks = handlerStacks(result.failures);
    if (givingUp) throw withHandlerStacks(new UnrecoverableError(summary), stacks);
    throw withHandlerStacks(new Error(summary), stacks);
  }
}

/**
 * A job that only places an event that already failed for good into the failed set (see
 * EventJobData.deadLetter): true until it ran once, so a replay of it runs the handlers.
 */
export function isDeadLetterPlacement(job: { data: EventJobData; attemptsMade: number }, ran = false): boolean {
  return job.data.deadLetter !== undefined && job.attemptsMade === (ran ? 1 : 0);
}

/** Whether no retry can fix a handler's error: BullMQ's UnrecoverableError, or what the options' `isPermanent` says. */
export function isPermanentFailure(err: unknown, options: { isPermanent?(err: unknown): boolean }): boolean {
  // An event whose data does not match its type's schema fails the same way on every retry.
  return err instanceof UnrecoverableError || err instanceof EventDataError || (options.isPermanent?.(err) ?? false);
}
