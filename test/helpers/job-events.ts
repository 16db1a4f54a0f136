import type { Job, Worker } from "bullmq";

/** Resolves with the next job of `worker` that finishes as `outcome` and matches `where`. */
export function nextJob<D>(
  worker: Worker<D>,
  outcome: "completed" | "failed",
  where: (job: Job<D>) => boolean = () => true,
): Promise<Job<D>> {
  return new Promise((resolve) => {
    const listener = (job: Job<D> | undefined) => {
      if (!job || !where(job)) return;
      worker.off(outcome, listener);
      resolve(job);
    };
    worker.on(outcome, listener);
  });
}
