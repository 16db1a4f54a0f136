import { DelayedError, UnrecoverableError, Worker, type Job } from "bullmq";
import type { Logger } from "pino";
import { errorMessage, withHandlerStacks } from "../events/dispatch.js";
import { DEFAULTS } from "../config/defaults.js";
import { warnUnlessOutage, type RedisClient } from "../redis/redis.js";
import { attemptOfJob, drawRetryDelay, type AttemptRunner } from "./attempt-runner.js";
import type { EventJobData, HandlerOutcomeData as Outcome } from "./event-job.js";
import { EVENTS_QUEUE } from "./names.js";

export interface EventWorkerOptions {
  /** A "worker" connection (maxRetriesPerRequest: null). */
  connection: RedisClient;
  prefix: string;
  queueName?: string;
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
export const STALLED_TOO_OFTEN = "job stalled more than allowable limit";

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
  const { runner, logger } = options;
  const maxStalls = options.maxStalls ?? DEFAULTS.jobMaxStalls;
  // The wait each retried attempt drew and recorded, by the error the job fails with: BullMQ asks
  // the strategy below for the wait as it fails the job (its backoff type is EVENT_BACKOFF).
  const drawn = new WeakMap<Error, number>();

  const worker: Worker<EventJobData> = new Worker<EventJobData>(options.queueName ?? EVENTS_QUEUE, (job, token) => runJob(job, token), {
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
        await job.updateProgress({ done: [...done], unrecorded: onlyOk(outcomes) } satisfies Progress);
      },
      stopping: () => worker.closing !== undefined,
      logger: logger.child({ eventId: data.id, eventType: data.type, jobId: job.id, attempt: number }),
    });
    switch (result.outcome) {
      case "completed":
      case "duplicate":
        return { handled: done.size };
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

const onlyOk = (outcomes: Record<string, Outcome>) => Object.fromEntries(Object.entries(outcomes).filter(([, o]) => o.status === "ok"));

/**
 * A job that only places an event that already failed for good into the failed set (see
 * EventJobData.deadLetter): true until it ran once, so a replay of it runs the handlers.
 */
export function isDeadLetterPlacement(job: { data: EventJobData; attemptsMade: number }, ran = false): boolean {
  return job.data.deadLetter !== undefined && job.attemptsMade === (ran ? 1 : 0);
}
