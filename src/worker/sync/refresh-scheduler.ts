import type { Queue } from "bullmq";
import type { Cluster, Redis } from "ioredis";
import { defineScripts } from "../../redis/define-scripts.js";
import { redisKeys } from "../../redis/keys.js";
import type { SyncedKind } from "./synced-kinds.js";

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
  /** The ids waiting for a refresh (a job reads them when it starts), each with its version. */
  pending(kind: SyncedKind, restaurantId: string): Promise<PendingIds>;
  /**
   * Forgets the ids a refresh has handled, unless one was noted again since `pending` read it:
   * that change may have happened after the sweep read its record, so it stays for the next job.
   */
  settle(kind: SyncedKind, restaurantId: string, handled: PendingIds): Promise<void>;
  /**
   * Called as a refresh job starts: from here on a new event schedules a new job rather than
   * being absorbed by this one, which may already have read past its record.
   */
  release(kind: SyncedKind, restaurantId: string): Promise<void>;
}

/** Pending ids and the version each was last noted at (a counter bumped on every event). */
export type PendingIds = ReadonlyMap<string, string>;

/** The marker a menu refresh leaves in the pending ids: menus are refreshed whole. */
export const WHOLE_MENU = "whole-menu";

/**
 * How long a restaurant's pending ids outlive the last event that noted one (the TTL is set again
 * on every request). A live refresh reads and settles them within its job's retries — seconds to
 * minutes, hours under a long 429 pause — so a week never loses one; what it bounds is the hash a
 * refresh that failed for good (a 4xx) or a restaurant that went away would otherwise leave
 * forever. The reconciliation sweep rereads everything anyway.
 */
export const PENDING_REFRESH_TTL_MS = 7 * 24 * 3600_000;

/** Deletes each id only if its version is still the one the refresh read (compare-and-delete). */
const SETTLE = `
for i = 1, #ARGV, 2 do
  if redis.call("HGET", KEYS[1], ARGV[i]) == ARGV[i + 1] then redis.call("HDEL", KEYS[1], ARGV[i]) end
end
return 0
`;

interface Scripts {
  svcSettlePending(key: string, ...idVersionPairs: string[]): Promise<number>;
}

export function createRefreshScheduler(opts: {
  redis: Redis | Cluster;
  queue: Queue<RefreshJobData>;
  prefix: string;
  debounceMs: number;
  /** @defaultValue PENDING_REFRESH_TTL_MS */
  pendingTtlMs?: number;
}): RefreshScheduler {
  const { redis, queue, prefix, debounceMs } = opts;
  const pendingTtlMs = opts.pendingTtlMs ?? PENDING_REFRESH_TTL_MS;
  const keys = redisKeys(prefix);
  const dedupId = (kind: SyncedKind, restaurantId: string) => `refresh-${kind}-${restaurantId}`;
  const scripts = defineScripts<Scripts>(redis, { svcSettlePending: { numberOfKeys: 1, lua: SETTLE } });

  return {
    async request(kind, restaurantId, id = WHOLE_MENU) {
      // Note the id first, then schedule: a job that starts in between still sees the id. The
      // version bump keeps it pending if a running sweep already read past it.
      // One transaction (one key, one slot): the hash never exists without its expiry.
      const key = keys.pendingRefresh(kind, restaurantId);
      await redis.multi().hincrby(key, id, 1).pexpire(key, pendingTtlMs).exec();
      await queue.add(
        "refresh",
        { kind, restaurantId },
        debounceMs > 0 ? { delay: debounceMs, deduplication: { id: dedupId(kind, restaurantId), ttl: debounceMs } } : {},
      );
    },
    pending: async (kind, restaurantId) => new Map(Object.entries(await redis.hgetall(keys.pendingRefresh(kind, restaurantId)))),
    async settle(kind, restaurantId, handled) {
      if (handled.size > 0) await scripts.svcSettlePending(keys.pendingRefresh(kind, restaurantId), ...[...handled].flat());
    },
    async release(kind, restaurantId) {
      await queue.removeDeduplicationKey(dedupId(kind, restaurantId));
    },
  };
}
