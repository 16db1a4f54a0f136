import type { Queue } from "bullmq";
import { waitFor } from "./wait-for.js";

/** Resolves once no job of `queues` is waiting, active, delayed or prioritized. */
export function waitForQueuesIdle(queues: readonly Queue[], opts: { timeoutMs: number; intervalMs?: number; what: string }): Promise<true> {
  return waitFor(async () => {
    for (const q of queues) {
      const counts = await q.getJobCounts("waiting", "active", "delayed", "prioritized");
      if (Object.values(counts).some((n) => n > 0)) return false;
    }
    return true;
  }, opts);
}
