import type { Job, Worker } from "bullmq";

/** Resolves with the next job of `worker` that finishes as `outcome` and matches `where`. */
export function nextJob(worker: Worker, outcome: "completed" | "failed", where: (job: Job) => boolean = () => true): Promise<Job> {
  return new Promise((resolve) => {
    const listener = (job: Job | undefined) => {
      if (!job || !where(job)) return;
      worker.off(outcome, listener);
      resolve(job);
    };
    worker.on(outcome, listener);
  });
}
