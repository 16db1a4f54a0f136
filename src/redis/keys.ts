import { DEFAULTS } from "../config/defaults.js";

/**
 * Every Redis key name of ours, built in one place (BullMQ builds its own queue keys under the same
 * prefix). See docs/redis.md for the layout.
 *
 * The hash-tag rule: every key one Lua script touches must hash to one Redis Cluster slot, so each
 * group of keys a script uses together carries the same `{tag}`. If the prefix carries a tag
 * itself (`{svc}`, as BullMQ needs on a cluster), it comes first and wins: then every key of a
 * deployment hashes to that one slot, which keeps each group together all the same.
 */
export interface RedisKeys {
  readonly prefix: string;
  /** The shared upstream rate budget of one API key id; one slot, tag `{keyId}` (the limiter's scripts). */
  upstreamBudget(keyId: string): { log: string; pause: string; last: string };
  /** The ids of one restaurant waiting for a refresh (a hash); tag `{restaurantId}` (the settle script). */
  pendingRefresh(kind: string, restaurantId: string): string;
  /** The mirror of one kind; tag `{kind}` (the upsert script touches all four). */
  mirror(kind: string): { data: string; meta: string; lastWrite: string; byRestaurant(restaurantId: string): string };
  /**
   * Reserved for the Redis-stream ingest path: the stream the edge appends verified events to. It
   * shares the tag `{ingest}` with `dedup`, so one script may `SET NX PX` a dedup key and `XADD` to
   * the stream atomically. The stream's consumer group is a name inside the stream, not a key.
   */
  readonly eventStream: string;
  /** Reserved for the ingest path: "event id seen" (`SET NX PX`); same slot as `eventStream`. */
  dedup(eventId: string): string;
}

/**
 * Builds our key names under `prefix` (QUEUE_PREFIX, the same one BullMQ uses).
 *
 * @example
 * const keys = redisKeys("{svc}");
 * keys.upstreamBudget(apiKeyId(key)).log // "{svc}:upstream:{3f2a…}:log"
 */
export function redisKeys(prefix: string = DEFAULTS.queuePrefix): RedisKeys {
  const ingest = `${prefix}:ingest:{ingest}`;
  return {
    prefix,
    upstreamBudget(keyId) {
      const base = `${prefix}:upstream:{${keyId}}`;
      return { log: `${base}:log`, pause: `${base}:pause`, last: `${base}:last` };
    },
    pendingRefresh: (kind, restaurantId) => `${prefix}:sync:pending:${kind}:{${restaurantId}}`,
    mirror(kind) {
      const base = `${prefix}:mirror:{${kind}}`;
      return { data: `${base}:data`, meta: `${base}:meta`, lastWrite: `${base}:last-write`, byRestaurant: (restaurantId) => `${base}:r:${restaurantId}` };
    },
    eventStream: `${ingest}:events`,
    dedup: (eventId) => `${ingest}:dedup:${eventId}`,
  };
}
