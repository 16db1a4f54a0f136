import type { Queue } from "bullmq";
import { waitFor } from "./wait-for.js";

/**
 * Resolves once no job of `queues` is waiting, active, delayed or prioritized — apart from the
 * next run of a job scheduler (the hourly event-log prune, a reconcile), which is always delayed.
 */
export function waitForQueuesIdle(queues: readonly Queue[], opts: { timeoutMs: number; intervalMs?: number; what: string }): Promise<true> {
  return waitFor(async () => {
    for (const q of queues) {
      const counts = await q.getJobCounts("waiting", "active", "prioritized");
      if (Object.values(counts).some((n) => n > 0)) return false;
      const delayed = await q.getDelayed();
      if (delayed.some((job) => !job.repeatJobKey)) return false;
    }
    return true;
  }, opts);
}
