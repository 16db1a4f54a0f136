import type { Job, Worker } from "bullmq";
import type { SettledEvent } from "../../src/worker/settled-events.js";
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

/** Resolves with the next event `role` settles as `outcome` (on either path) that matches `where`. */
export function nextSettled(
  role: WorkerRole,
  outcome: SettledEvent["outcome"],
  where: (event: SettledEvent) => boolean = () => true,
): Promise<SettledEvent> {
  return new Promise((resolve) => {
    const off = role.onSettled((event) => {
      if (event.outcome !== outcome || !where(event)) return;
      off();
      resolve(event);
    });
  });
}
