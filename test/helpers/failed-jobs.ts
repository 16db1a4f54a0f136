import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import { SYNC_QUEUE } from "../../src/queue/events-queue.js";

/**
 * Puts jobs in the sync queue's failed set under `prefix`, as a worker that gave up on them leaves
 * them (taken, then moved to failed with its error on their one attempt).
 */
export async function failSyncJobs(
  redisUrl: string,
  prefix: string,
  jobs: readonly { name: string; data: Record<string, unknown>; reason: string }[],
): Promise<void> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue(SYNC_QUEUE, { connection: redis, prefix });
  const worker = new Worker(SYNC_QUEUE, null, { connection: redis, prefix, autorun: false });
  try {
    for (const { name, data, reason } of jobs) {
      await queue.add(name, data, { attempts: 1 });
      const job = await worker.getNextJob("test-token");
      await job.moveToFailed(new Error(reason), "test-token");
    }
  } finally {
    await worker.close();
    await queue.close();
    await redis.quit();
  }
}
