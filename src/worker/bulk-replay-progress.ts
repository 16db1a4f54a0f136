import type { Job, Worker } from "bullmq";
import type { EventJobData } from "../queue/events-queue.js";
import { type RedisClient, redisKeys } from "../redis/redis.js";

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
  /** Replay jobs taken off the queue unrun by a cancel. */
  withdrawn: number;
  state: "running" | "done" | "cancelled";
}

/** A bulk replay's progress record in Redis: created when it starts, counted on by every worker. */
export function bulkReplayProgress(redis: RedisClient, prefix: string) {
  const key = (id: string) => redisKeys(prefix).operator.bulkReplay(id);
  return {
    async start(id: string, total: number): Promise<void> {
      await redis.multi().hset(key(id), { total, queued: 0 }).expire(key(id), BULK_REPLAY_TTL_SECONDS).exec();
    },
    /**
     * Queuing has ended: `total` becomes the number actually queued. True when a cancel came
     * first (its caller then withdraws what it queued: the cancel could not, queuing still ran).
     */
    async queued(id: string, total: number): Promise<boolean> {
      const answers = await redis.multi().hset(key(id), { total, queued: 1 }).hget(key(id), "cancelled").exec();
      return answers?.[1]?.[1] === "1";
    },
    /**
     * Marks it cancelled: undefined when there is no such replay, else whether queuing had
     * already ended (then the canceller withdraws the queued jobs; else the queuing loop does).
     */
    async cancel(id: string): Promise<{ queuingEnded: boolean } | undefined> {
      const queued = (await redis.eval(CANCEL_IF_EXISTS, 1, key(id))) as string | null | number;
      if (queued === 0) return undefined;
      return { queuingEnded: queued === "1" };
    },
    /** Forgets a replay that never queued anything (its request was refused after all). */
    async discard(id: string): Promise<void> {
      await redis.del(key(id));
    },
    async cancelled(id: string): Promise<boolean> {
      return (await redis.hget(key(id), "cancelled")) === "1";
    },
    async withdrew(id: string, count: number): Promise<void> {
      if (count > 0) await redis.hincrby(key(id), "withdrawn", count);
    },
    async read(id: string): Promise<BulkReplayProgress | undefined> {
      const fields = await redis.hgetall(key(id));
      if (fields.total === undefined) return undefined;
      const [total, done, failed, withdrawn] = [fields.total, fields.done, fields.failed, fields.withdrawn].map((v) => Number(v ?? 0)) as [
        number,
        number,
        number,
        number,
      ];
      const state = fields.cancelled === "1" ? "cancelled" : fields.queued === "1" && done + failed >= total ? "done" : "running";
      return { id, total, done, failed, withdrawn, state };
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

// 0 when there is no such replay, else its `queued` field (nil while queuing runs).
const CANCEL_IF_EXISTS = `if redis.call("exists", KEYS[1]) == 0 then return 0 end redis.call("hset", KEYS[1], "cancelled", 1) return redis.call("hget", KEYS[1], "queued")`;
const INCR_IF_EXISTS = `if redis.call("exists", KEYS[1]) == 1 then return redis.call("hincrby", KEYS[1], ARGV[1], 1) end return 0`;
