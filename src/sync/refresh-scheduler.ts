import type { Queue } from "bullmq";
import type { Cluster, Redis } from "ioredis";
import { defineScripts } from "../redis/define-scripts.js";
import { redisKeys } from "../redis/keys.js";
import { createRefreshRuns, type RefreshJobData, type RefreshRuns } from "./refresh-runs.js";
import { RESOURCES, type SyncedKind } from "./resources.js";

/** What an event said about the record it named: hints for the narrowest read, never trusted as data. */
export interface RefreshNote {
  eventId?: string;
  /** orders: the status the event carried (a lower bound: the state machine only moves forward). */
  status?: string;
  /** orders: when the order was created (where a newest-first list can stop looking). */
  createdAt?: string;
  /** bookings: the booking's date. */
  date?: string;
}

/** What the scheduler keeps of a pending id besides its version: the events' hints and the retry state. */
export interface PendingNote extends Omit<RefreshNote, "eventId"> {
  /** Epoch ms of the first event that named the id since it was last read. */
  firstNotedAt: number;
  /** The first events that named it (at most MAX_EVENT_IDS): what a report of an unlisted id names. */
  eventIds?: string[];
  /** Rounds that looked for the id and did not find it. */
  misses?: number;
  /** Epoch ms before which no refresh looks for it again (backoff after a miss). */
  retryAt?: number;
}

/** One restaurant's pending ids of a kind, as a refresh job takes them. */
export interface PendingRestaurant {
  restaurantId: string;
  ids: PendingIds;
  notes: ReadonlyMap<string, PendingNote>;
  /** The restaurant's score in the index when read: `forgetIfIdle` removes it only if unchanged. */
  score: string;
}

export interface RefreshScheduler extends RefreshRuns {
  /**
   * Notes a restaurant's changed `id` (or whole menu) with the event's hints; a run follows within
   * `debounceMs` (`runWithin`).
   */
  request(kind: SyncedKind, restaurantId: string, id?: string, note?: RefreshNote): Promise<void>;
  /** The ids of one restaurant waiting for a refresh, each with its version (reconcile tells webhook from missed by it). */
  pending(kind: SyncedKind, restaurantId: string): Promise<PendingIds>;
  /** Every restaurant with pending ids of the kind, with the ids' notes (what a refresh job starts from). */
  pendingAll(kind: SyncedKind): Promise<PendingRestaurant[]>;
  /**
   * Forgets the ids a refresh has read, unless one was noted again since `pending` read it: that
   * change may have happened after the read saw its record, so it stays for the next job.
   */
  forgetRead(kind: SyncedKind, restaurantId: string, read: PendingIds): Promise<void>;
  /** Keeps an id pending with a new note (a miss and its retry time), unless an event noted it again meanwhile. */
  defer(kind: SyncedKind, restaurantId: string, id: string, version: string, note: PendingNote): Promise<void>;
  /** Drops a restaurant from the kind's index when it has no pending id left and no request came since `score`. */
  forgetIfIdle(kind: SyncedKind, restaurantId: string, score: string): Promise<void>;
}

/** Pending ids and the version each was last noted at (a counter bumped on every event). */
export type PendingIds = ReadonlyMap<string, string>;

/** The marker a menu refresh leaves in the pending ids: menus are refreshed whole. */
export const WHOLE_MENU = "whole-menu";

/**
 * How long a restaurant's pending ids outlive the last event that noted one (the TTL is set again
 * on every request). A live refresh reads and forgets them, or reports them as unlisted, within
 * SYNC_UNLISTED_GIVE_UP_SECONDS; what it bounds is the hash a refresh that failed for good (a 4xx)
 * would otherwise leave forever. The reconciliation sweep rereads everything anyway.
 */
export const PENDING_REFRESH_TTL_MS = 7 * 24 * 3600_000;

/** Event ids kept per pending id (a flood of events for one order must not grow the note). */
const MAX_EVENT_IDS = 20;

/**
 * Bumps the id's version and merges the event's hints into its note: the furthest order status seen
 * (a later one is a tighter lower bound), the latest dates, the first event ids; a new event clears
 * any backoff (the record changed: look at once).
 * KEYS: pending, notes. ARGV: id, ttlMs, nowMs, eventId, status, statusRank, createdAt, date.
 */
const NOTE = `
redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
redis.call("PEXPIRE", KEYS[1], ARGV[2])
local raw = redis.call("HGET", KEYS[2], ARGV[1])
local n = raw and cjson.decode(raw) or { firstNotedAt = tonumber(ARGV[3]) }
if ARGV[4] ~= "" then
  local ids = n.eventIds or {}
  if #ids < ${MAX_EVENT_IDS} then ids[#ids + 1] = ARGV[4] end
  n.eventIds = ids
end
if ARGV[5] ~= "" and (n.rank == nil or tonumber(ARGV[6]) > n.rank) then
  n.status = ARGV[5]
  n.rank = tonumber(ARGV[6])
end
if ARGV[7] ~= "" then n.createdAt = ARGV[7] end
if ARGV[8] ~= "" then n.date = ARGV[8] end
n.retryAt = nil
redis.call("HSET", KEYS[2], ARGV[1], cjson.encode(n))
redis.call("PEXPIRE", KEYS[2], ARGV[2])
return 0
`;

/** Deletes each id (and its note) only if its version is still the one the refresh read (compare-and-delete). */
const FORGET_READ = `
for i = 1, #ARGV, 2 do
  if redis.call("HGET", KEYS[1], ARGV[i]) == ARGV[i + 1] then
    redis.call("HDEL", KEYS[1], ARGV[i])
    redis.call("HDEL", KEYS[2], ARGV[i])
  end
end
return 0
`;

/** Replaces an id's note only if no event noted the id since the refresh read it. ARGV: id, version, note. */
const DEFER = `
if redis.call("HGET", KEYS[1], ARGV[1]) == ARGV[2] then redis.call("HSET", KEYS[2], ARGV[1], ARGV[3]) end
return 0
`;

/** Removes a restaurant from the index if its score is the one read (no request since). */
const FORGET_IDLE = `
if redis.call("ZSCORE", KEYS[1], ARGV[1]) == ARGV[2] then redis.call("ZREM", KEYS[1], ARGV[1]) end
return 0
`;

interface Scripts {
  svcNotePendingId(pending: string, notes: string, ...args: string[]): Promise<number>;
  svcForgetReadIds(pending: string, notes: string, ...idVersionPairs: string[]): Promise<number>;
  svcDeferPendingId(pending: string, notes: string, id: string, version: string, note: string): Promise<number>;
  svcForgetIdleRestaurant(index: string, restaurantId: string, score: string): Promise<number>;
}

export function createRefreshScheduler(opts: {
  redis: Redis | Cluster;
  queue: Queue<RefreshJobData>;
  prefix: string;
  debounceMs: number;
  /** @defaultValue PENDING_REFRESH_TTL_MS */
  pendingTtlMs?: number;
  /** @defaultValue Date.now */
  now?: () => number;
}): RefreshScheduler {
  const { redis, queue, prefix, debounceMs } = opts;
  const pendingTtlMs = opts.pendingTtlMs ?? PENDING_REFRESH_TTL_MS;
  const now = opts.now ?? Date.now;
  const keys = redisKeys(prefix);
  const scripts = defineScripts<Scripts>(redis, {
    svcNotePendingId: { numberOfKeys: 2, lua: NOTE },
    svcForgetReadIds: { numberOfKeys: 2, lua: FORGET_READ },
    svcDeferPendingId: { numberOfKeys: 2, lua: DEFER },
    svcForgetIdleRestaurant: { numberOfKeys: 1, lua: FORGET_IDLE },
  });
  const hashes = (kind: SyncedKind, restaurantId: string) =>
    [keys.pendingRefresh(kind, restaurantId), keys.pendingNotes(kind, restaurantId)] as const;

  const runs = createRefreshRuns({ redis, queue, keys });
  const pending = async (kind: SyncedKind, restaurantId: string): Promise<PendingIds> =>
    new Map(Object.entries(await redis.hgetall(keys.pendingRefresh(kind, restaurantId))));

  return {
    async request(kind, restaurantId, id = WHOLE_MENU, note = {}) {
      // Note the id first, then index the restaurant, then schedule: a job that starts in between
      // still sees the id. The version bump keeps it pending if a running read already passed it. A
      // status outside the kind's states is dropped.
      const rank = RESOURCES[kind].states?.rank(note.status);
      await scripts.svcNotePendingId(
        ...hashes(kind, restaurantId),
        id,
        String(pendingTtlMs),
        String(now()),
        note.eventId ?? "",
        rank === undefined ? "" : (note.status ?? ""),
        rank === undefined ? "" : String(rank),
        note.createdAt ?? "",
        note.date ?? "",
      );
      const index = keys.pendingIndex(kind);
      await redis.multi().zincrby(index, 1, restaurantId).pexpire(index, pendingTtlMs).exec();
      await runs.runWithin(kind, debounceMs);
    },
    pending,
    async pendingAll(kind) {
      const restaurants = withScores(await redis.zrange(keys.pendingIndex(kind), "0", "-1", "WITHSCORES"));
      return Promise.all(
        restaurants.map(async ({ restaurantId, score }) => {
          const [ids, rawNotes] = await Promise.all([pending(kind, restaurantId), redis.hgetall(keys.pendingNotes(kind, restaurantId))]);
          const notes = new Map<string, PendingNote>();
          for (const [id, raw] of Object.entries(rawNotes)) notes.set(id, parseNote(raw));
          return { restaurantId, ids, notes, score };
        }),
      );
    },
    async forgetRead(kind, restaurantId, read) {
      if (read.size > 0) await scripts.svcForgetReadIds(...hashes(kind, restaurantId), ...[...read].flat());
    },
    async defer(kind, restaurantId, id, version, note) {
      await scripts.svcDeferPendingId(...hashes(kind, restaurantId), id, version, JSON.stringify(note));
    },
    async forgetIfIdle(kind, restaurantId, score) {
      if ((await redis.hlen(keys.pendingRefresh(kind, restaurantId))) > 0) return;
      await scripts.svcForgetIdleRestaurant(keys.pendingIndex(kind), restaurantId, score);
    },
    ...runs,
  };
}

/**
 * ZRANGE … WITHSCORES as (member, score) pairs: a flat list under RESP2, pairs (the score a number)
 * under RESP3, which ioredis 6 speaks by default. Scores are whole numbers (ZINCRBY 1), so both
 * print alike, as the forget script's ZSCORE compares them.
 */
function withScores(reply: unknown[]): { restaurantId: string; score: string }[] {
  const out: { restaurantId: string; score: string }[] = [];
  if (reply.every(Array.isArray)) {
    for (const pair of reply as [unknown, unknown][]) out.push({ restaurantId: String(pair[0]), score: String(pair[1]) });
    return out;
  }
  for (let i = 0; i + 1 < reply.length; i += 2) out.push({ restaurantId: String(reply[i]), score: String(reply[i + 1]) });
  return out;
}

/** A note as stored; one that does not parse (written by hand, or damaged) counts as first noted now. */
function parseNote(raw: string): PendingNote {
  try {
    const value = JSON.parse(raw) as Partial<PendingNote> | null;
    if (typeof value?.firstNotedAt === "number") {
      // cjson writes an empty Lua table as {}, never []: keep only a real list.
      return { ...value, firstNotedAt: value.firstNotedAt, eventIds: Array.isArray(value.eventIds) ? value.eventIds : [] };
    }
  } catch {
    // fall through
  }
  return { firstNotedAt: Date.now() };
}
