import type { Job, Worker } from "bullmq";
import type { Logger } from "pino";
import { isKnownEventType } from "../events/catalog.js";
import type { Metrics } from "../metrics/metrics.js";
import { type EventJobData, isDeadLetterPlacement, EVENTS_QUEUE } from "../queue/events-queue.js";
import { RECONCILE_JOBS } from "../sync/reconcile-jobs.js";
import { attemptOfJob } from "../queue/attempt-runner.js";

/** Job names are event types, which senders choose: keep the label set bounded. */
export function jobLabel(name: string): string {
  return isKnownEventType(name) ||
    name.startsWith("change.") ||
    ["refresh", "reconcile", "prune-events", ...Object.values(RECONCILE_JOBS)].includes(name)
    ? name
    : "other";
}

/** Whether a failed attempt was the job's last (no retry follows). */
export function isFinalFailure(job: Job): boolean {
  return job.attemptsMade >= (job.opts.attempts ?? 1) || job.finishedOn !== undefined;
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
      // Counted and logged when the event failed on the ingest stream.
      if (!job || isDeadLetterPlacement(job as Job<EventJobData>, true)) return;
      const final = isFinalFailure(job);
      metrics.jobs.inc({ queue: w.name, name: jobLabel(job.name), outcome: final ? "failed" : "retried" });
      // An event's attempt is numbered in its run, as the attempt runner's lines say it (BullMQ
      // counted the failed one already); a sync job's is BullMQ's count.
      const attempt =
        w.name === EVENTS_QUEUE
          ? attemptOfJob({ data: job.data as EventJobData, attemptsMade: job.attemptsMade - 1, opts: job.opts }).number
          : job.attemptsMade;
      logger.warn(
        { queue: w.name, jobId: job.id, job: job.name, attempt, err: err.message },
        final ? "job failed for good" : "job failed, will retry",
      );
    });
  }
}
