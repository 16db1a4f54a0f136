import type { Job, Worker } from "bullmq";
import type { EventJobData } from "../queue/event-job.js";
import type { RedisClient } from "../redis/connection.js";
import { redisKeys } from "../redis/keys.js";

/** How long a bulk replay's progress stays readable after it was started. */
export const BULK_REPLAY_TTL_SECONDS = 7 * 24 * 3600;

export interface BulkReplayProgress {
  id: string;
  /** Events queued (while queuing: the count the dry run gave). */
  total: number;
  /** Replay jobs that ended handled. */
  done: number;
  /** Replay jobs that ended failed for good. */
  failed: number;
  state: "running" | "done";
}

/** A bulk replay's progress record in Redis: created when it starts, counted on by every worker. */
export function bulkReplayProgress(redis: RedisClient, prefix: string) {
  const key = (id: string) => redisKeys(prefix).operator.bulkReplay(id);
  return {
    async start(id: string, total: number): Promise<void> {
      await redis.multi().hset(key(id), { total, queued: 0 }).expire(key(id), BULK_REPLAY_TTL_SECONDS).exec();
    },
    /** Every job is queued: `total` becomes the number actually queued. */
    async queued(id: string, total: number): Promise<void> {
      await redis.hset(key(id), { total, queued: 1 });
    },
    async read(id: string): Promise<BulkReplayProgress | undefined> {
      const fields = await redis.hgetall(key(id));
      if (fields.total === undefined) return undefined;
      const [total, done, failed] = [fields.total, fields.done, fields.failed].map((v) => Number(v ?? 0)) as [number, number, number];
      return { id, total, done, failed, state: fields.queued === "1" && done + failed >= total ? "done" : "running" };
    },
  };
}

/**
 * Counts the end of each bulk replay's job into its progress: handled, or failed for good (a
 * failure that will be retried is not an end; BullMQ sets `finishedOn` only on the last one).
 */
export function trackBulkReplays(worker: Pick<Worker<EventJobData>, "on">, redis: RedisClient, prefix: string): void {
  const count = (job: Job<EventJobData> | undefined, field: "done" | "failed") => {
    const bulk = job?.data.bulk;
    if (!bulk) return;
    // A progress record that expired is not brought back by a late job.
    void redis.eval(INCR_IF_EXISTS, 1, redisKeys(prefix).operator.bulkReplay(bulk), field).catch(() => undefined);
  };
  worker.on("completed", (job) => count(job, "done"));
  worker.on("failed", (job) => {
    if (job?.finishedOn) count(job, "failed");
  });
}

const INCR_IF_EXISTS = `if redis.call("exists", KEYS[1]) == 1 then return redis.call("hincrby", KEYS[1], ARGV[1], 1) end return 0`;
