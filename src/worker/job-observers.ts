import type { Worker } from "bullmq";
import type { Logger } from "pino";
import { isKnownEventType } from "../events/catalog.js";
import type { Metrics } from "../metrics/metrics.js";

/** Job names are event types, which senders choose: keep the label set bounded. */
function jobLabel(name: string): string {
  return isKnownEventType(name) || name.startsWith("change.") || ["refresh", "reconcile", "prune-events"].includes(name) ? name : "other";
}

/** Counts and times every finished job, and logs each failed attempt ("failed for good" is the dead letter). */
export function observeJobs(workers: readonly Worker[], { metrics, logger }: { metrics: Metrics; logger: Logger }): void {
  for (const w of workers) {
    w.on("completed", (job) => {
      metrics.jobs.inc({ queue: w.name, name: jobLabel(job.name), outcome: "completed" });
      if (job.processedOn && job.finishedOn)
        metrics.jobSeconds.observe({ queue: w.name, name: jobLabel(job.name) }, (job.finishedOn - job.processedOn) / 1000);
    });
    w.on("failed", (job, err) => {
      if (!job) return;
      const final = job.attemptsMade >= (job.opts.attempts ?? 1) || job.finishedOn !== undefined;
      metrics.jobs.inc({ queue: w.name, name: jobLabel(job.name), outcome: final ? "failed" : "retried" });
      logger.warn(
        { queue: w.name, jobId: job.id, job: job.name, attempt: job.attemptsMade, err: err.message },
        final ? "job failed for good" : "job failed, will retry",
      );
    });
  }
}
