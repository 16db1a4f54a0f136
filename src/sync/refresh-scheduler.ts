import type { Queue } from "bullmq";
import type { Redis } from "ioredis";
import type { SyncedKind } from "./resources.js";

export interface RefreshJobData {
  kind: SyncedKind;
  restaurantId: string;
}

export interface RefreshScheduler {
  /**
   * Notes that `id` (or the whole menu) of a restaurant changed and makes sure one refresh job
   * will run within `debounceMs`: a burst of events for one restaurant shares one list sweep.
   */
  request(kind: SyncedKind, restaurantId: string, id?: string): Promise<void>;
  /** The ids waiting for a refresh (a job reads them when it starts). */
  pending(kind: SyncedKind, restaurantId: string): Promise<string[]>;
  /** Forgets ids a refresh has handled; ids noted meanwhile stay for the next refresh. */
  settle(kind: SyncedKind, restaurantId: string, ids: readonly string[]): Promise<void>;
  /**
   * Called as a refresh job starts: from here on a new event schedules a new job rather than
   * being absorbed by this one, which may already have read past its record.
   */
  release(kind: SyncedKind, restaurantId: string): Promise<void>;
}

/** The marker a menu refresh leaves in the pending set: menus are refreshed whole. */
export const WHOLE = "*";

export function createRefreshScheduler(opts: { redis: Redis; queue: Queue<RefreshJobData>; prefix: string; debounceMs: number }): RefreshScheduler {
  const { redis, queue, prefix, debounceMs } = opts;
  // The braces keep a restaurant's keys in one Redis Cluster slot.
  const pendingKey = (kind: SyncedKind, restaurantId: string) => `${prefix}:sync:pending:${kind}:{${restaurantId}}`;
  const dedupId = (kind: SyncedKind, restaurantId: string) => `refresh-${kind}-${restaurantId}`;

  return {
    async request(kind, restaurantId, id = WHOLE) {
      // Note the id first, then schedule: a job that starts in between still sees the id.
      await redis.sadd(pendingKey(kind, restaurantId), id);
      await queue.add(
        "refresh",
        { kind, restaurantId },
        debounceMs > 0 ? { delay: debounceMs, deduplication: { id: dedupId(kind, restaurantId), ttl: debounceMs } } : {},
      );
    },
    pending: (kind, restaurantId) => redis.smembers(pendingKey(kind, restaurantId)),
    async settle(kind, restaurantId, ids) {
      if (ids.length > 0) await redis.srem(pendingKey(kind, restaurantId), ...ids);
    },
    async release(kind, restaurantId) {
      await queue.removeDeduplicationKey(dedupId(kind, restaurantId));
    },
  };
}
