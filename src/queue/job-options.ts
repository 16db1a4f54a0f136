import type { DefaultJobOptions } from "bullmq";
import type { Config } from "../config/config.js";

/** Retries: exponential with jitter; with the defaults (10 attempts from 1 s) about 17 minutes. */
export function retryJobOptions(attempts: number, backoffMs: number): DefaultJobOptions {
  return { attempts, backoff: { type: "exponential", delay: backoffMs, jitter: 0.5 } };
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
