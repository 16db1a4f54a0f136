import type { DefaultJobOptions } from "bullmq";
import type { Config } from "../config/config.js";

const JITTER = 0.5;

/**
 * How many failed attempts' stacks a job keeps (BullMQ appends one per attempt): the latest few
 * say where it fails; all ten, each up to a bounded stack, would only fill Redis.
 */
export const KEPT_STACKS = 3;

/** Retries: exponential with jitter; with the defaults (10 attempts from 1 s) about 17 minutes. */
export function retryJobOptions(attempts: number, backoffMs: number): DefaultJobOptions {
  return { attempts, backoff: { type: "exponential", delay: backoffMs, jitter: JITTER }, stackTraceLimit: KEPT_STACKS };
}

/** An events queue job's retries: retryJobOptions' schedule, drawn for the attempt's record (EVENT_BACKOFF). */
export function eventRetryOptions(attempts: number, backoffMs: number): DefaultJobOptions {
  return { ...retryJobOptions(attempts, backoffMs), backoff: eventBackoff(backoffMs) };
}

/**
 * The events queue's backoff type. BullMQ asks a custom type of the worker's strategy
 * (event-worker.ts), which hands it the wait the attempt drew from BullMQ's own built-in
 * exponential backoff with these `delay` and `jitter` (attempt-runner.ts, drawRetryDelay), so the
 * attempt's record names the time BullMQ schedules. Its exponent is the attempt's number in its
 * run, which spans the ingest stream's first attempt and the job's.
 */
export const EVENT_BACKOFF = "event-attempt";

/** The backoff of every events queue job: BullMQ's exponential from `backoffMs`, with jitter. */
export const eventBackoff = (backoffMs: number) => ({ type: EVENT_BACKOFF, delay: backoffMs, jitter: JITTER });

/** BullMQ keep-options from the config's retention (count 0 removes a job as it finishes). */
export function retentionJobOptions(retention: Config["retention"]): DefaultJobOptions {
  const keep = ({ count, ageSeconds }: { count: number; ageSeconds: number }) => (count === 0 ? true : { count, age: ageSeconds });
  return { removeOnComplete: keep(retention.completed), removeOnFail: keep(retention.failed) };
}

/** The options every job of ours gets from the config: its retries and how long it is kept. */
export function configuredJobOptions(config: Pick<Config, "worker" | "retention">): DefaultJobOptions {
  return { ...retryJobOptions(config.worker.attempts, config.worker.backoffMs), ...retentionJobOptions(config.retention) };
}

/** configuredJobOptions for the events queue: its jobs' waits are drawn by the attempt (EVENT_BACKOFF). */
export function configuredEventJobOptions(config: Pick<Config, "worker" | "retention">): DefaultJobOptions {
  return { ...eventRetryOptions(config.worker.attempts, config.worker.backoffMs), ...retentionJobOptions(config.retention) };
}
