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
 * The wait before retry `retry` (1: the first) as BullMQ's built-in strategies draw it from a
 * job's `backoff` (`fixed`, or `exponential` doubling from `delay`, with `jitter`); undefined for
 * any other strategy.
 * Drawn before an attempt runs, so the attempt's record names when its retry comes, and the
 * retry is then scheduled with this very delay (event-worker.ts, continuation.ts).
 */
export function retryDelayMs(
  option: number | { type: string; delay?: number | undefined; jitter?: number | undefined } | undefined,
  retry: number,
  random = Math.random,
): number | undefined {
  // A number is a fixed delay, as BullMQ reads it.
  const backoff = typeof option === "number" ? { type: "fixed", delay: option } : option;
  if (backoff?.type !== "fixed" && backoff?.type !== "exponential") return undefined;
  const longest = backoff.type === "fixed" ? (backoff.delay ?? 0) : Math.round(2 ** (retry - 1) * (backoff.delay ?? 0));
  const jitter = backoff.jitter ?? 0;
  return jitter > 0 ? Math.floor(random() * longest * jitter + longest * (1 - jitter)) : longest;
}

/** The first retry's wait after an attempt outside BullMQ (straight from the ingest stream), on retryJobOptions' schedule. */
export const firstRetryDelayMs = (backoffMs: number, random = Math.random): number =>
  retryDelayMs({ type: "exponential", delay: backoffMs, jitter: JITTER }, 1, random) ?? backoffMs;

/**
 * The retries left to an event whose first attempt ran outside BullMQ (straight from the ingest
 * stream) and failed: the job waits `firstDelayMs` (the first backoff, as the attempt recorded
 * it), then goes on with the same schedule as retryJobOptions (BullMQ's exponential backoff
 * doubles from the delay it is given). Undefined when `attempts` leaves no retry.
 */
export function remainingRetryOptions(
  attempts: number,
  backoffMs: number,
  firstDelayMs = firstRetryDelayMs(backoffMs),
): DefaultJobOptions | undefined {
  if (attempts <= 1) return undefined;
  return { attempts: attempts - 1, delay: firstDelayMs, backoff: { type: "exponential", delay: backoffMs * 2, jitter: JITTER } };
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
