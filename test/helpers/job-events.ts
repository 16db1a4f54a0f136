import type { Job, Worker } from "bullmq";
import type { FinishedEvent } from "../../src/worker/worker-role.js";
import type { WorkerRole } from "../../src/worker/worker-role.js";

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

/** Resolves with the next attempt `role` finishes as `outcome` (on either path) whose event matches `where`. */
export function nextFinished(
  role: WorkerRole,
  outcome: FinishedEvent["outcome"],
  where: (event: FinishedEvent) => boolean = () => true,
): Promise<FinishedEvent> {
  return new Promise((resolve) => {
    const off = role.onFinished((event) => {
      if (event.outcome !== outcome || !where(event)) return;
      off();
      resolve(event);
    });
  });
}
