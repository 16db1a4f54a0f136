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
  upstreamBudget(keyId: string): {
    log: string;
    pause: string;
    next: string;
    activeLog: string;
    fullLog: string;
    webhookWaiters: string;
    activeWaiters: string;
  };
  /** The ids of a kind waiting for a refresh, each with its version and what the events said (a hash); its own slot. */
  pendingRefresh(kind: string): string;
  /** Epoch ms before which no run of a kind's refresh starts (the budget's pace after a run), with a TTL; its own slot. */
  refreshPace(kind: string): string;
  /** Who runs the active reconciliation pass now (a string: the holder's token, with a TTL); its own slot. */
  readonly activePassLease: string;
  /**
   * Set by the workers and never expired: a worker that finds it missing while PostgreSQL says the
   * service ran knows Redis lost its data (worker/gap-watch.ts); its own slot.
   */
  readonly workersAlive: string;
  /** Held (SET NX with a TTL) by the one worker that restores an emptied Redis; its own slot. */
  readonly restoringRedis: string;
  /**
   * The ingest path (queue/stream-sink.ts, queue/stream-consumer.ts): the stream the edge appends
   * verified events to and the workers read, and each event id's "seen" key. The edge's script
   * touches both, so they share the tag `{ingest}` (the prefix's own tag when it has one). The
   * consumer group is a name inside the stream, not a key.
   */
  readonly ingest: { stream: string; group: string; seen(eventId: string): string };
  /** The operator API (worker/operator-actions.ts): a bulk replay's progress (a hash), an Idempotency-Key's answer. */
  readonly operator: { bulkReplay(id: string): string; idempotency(digest: string): string; bulkReplayByFilter(digest: string): string };
  /** The console's charts (metrics/minute-samples.ts): one point a minute per series, a hash of at most 120 fields; its own slot. */
  readonly minuteSamples: string;
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
      return {
        log: `${base}:log`,
        pause: `${base}:pause`,
        next: `${base}:next`,
        activeLog: `${base}:log:active`,
        fullLog: `${base}:log:full`,
        webhookWaiters: `${base}:waiting:webhook`,
        activeWaiters: `${base}:waiting:active`,
      };
    },
    pendingRefresh: (kind) => `${prefix}:sync:pending-ids:${kind}`,
    refreshPace: (kind) => `${prefix}:sync:refresh-pace:${kind}`,
    activePassLease: `${prefix}:sync:active-pass-lease`,
    workersAlive: `${prefix}:sync:workers-alive`,
    restoringRedis: `${prefix}:sync:restoring`,
    ingest: { stream: `${ingest}:events`, group: "pump", seen: (eventId) => `${ingest}:seen:${eventId}` },
    operator: {
      bulkReplay: (id) => `${prefix}:operator:replay:${id}`,
      idempotency: (digest) => `${prefix}:operator:idempotency:${digest}`,
      // The last bulk replay started for one filter (its id): a second one waits until it ends.
      bulkReplayByFilter: (digest) => `${prefix}:operator:replay-by-filter:${digest}`,
    },
    minuteSamples: `${prefix}:metrics:minute-samples`,
  };
}
