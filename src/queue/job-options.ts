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

/**
 * The retries left to an event whose first attempt ran outside BullMQ (straight from the ingest
 * stream) and failed: the job waits the first backoff, then goes on with the same schedule as
 * retryJobOptions (BullMQ's exponential backoff doubles from the delay it is given). Undefined
 * when `attempts` leaves no retry.
 */
export function remainingRetryOptions(attempts: number, backoffMs: number, random = Math.random): DefaultJobOptions | undefined {
  if (attempts <= 1) return undefined;
  return {
    attempts: attempts - 1,
    delay: Math.floor(random() * backoffMs * JITTER + backoffMs * (1 - JITTER)),
    backoff: { type: "exponential", delay: backoffMs * 2, jitter: JITTER },
  };
}

/** BullMQ keep-options from the config's retention (count 0 removes a job as it finishes). */
export function retentionJobOptions(retention: Config["retention"]): DefaultJobOptions {
  const keep = ({ count, ageSeconds }: { count: number; ageSeconds: number }) => (count === 0 ? true : { count, age: ageSeconds });
  return { removeOnComplete: keep(retention.completed), removeOnFail: keep(retention.failed) };
}

/** The options every job of ours gets from the config: its retries and how long it is kept. */
export function configuredJobOptions(config: Pick<Config, "worker" | "retention">): DefaultJobOptions {
  return { ...retryJobOptions(config.worker.attempts, config.worker.backoffMs), ...retentionJobOptions(config.retention) };
}
