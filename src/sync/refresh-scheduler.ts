import type { Queue } from "bullmq";
import type { Cluster, Redis } from "ioredis";
import { defineScripts, redisKeys } from "../redis/redis.js";
import { createRefreshRuns, type RefreshJobData, type RefreshRuns } from "./refresh-runs.js";
import type { ResumePoint } from "./read-plan.js";
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
  /** Where the read looking for it stopped at its page budget: the next job goes on from there. */
  resume?: ResumePoint;
}

/** One id waiting for a refresh, as a refresh job takes it. */
export interface PendingId {
  restaurantId: string;
  /** The record's id, or WHOLE_MENU. */
  id: string;
  /** Bumped by every event that names the id: what `forgetRead` and `defer` compare. */
  version: number;
  note: PendingNote;
}

export interface RefreshScheduler extends RefreshRuns {
  /**
   * Notes a restaurant's changed `id` (or whole menu) with the event's hints; a run follows within
   * `debounceMs` (`runWithin`).
   */
  request(kind: SyncedKind, restaurantId: string, id?: string, note?: RefreshNote): Promise<void>;
  /** Every id of the kind waiting for a refresh (what a refresh job starts from; reconcile tells webhook from missed by it). */
  pending(kind: SyncedKind): Promise<PendingId[]>;
  /**
   * Forgets the ids a refresh has read, unless one was noted again since `pending` read it: that
   * change may have happened after the read saw its record, so it stays for the next job.
   */
  forgetRead(kind: SyncedKind, read: readonly PendingId[]): Promise<void>;
  /** Keeps an id pending with a new note (a miss and its retry time), unless an event noted it again meanwhile. */
  defer(kind: SyncedKind, pending: PendingId, note: PendingNote): Promise<void>;
}

/** The marker a menu refresh leaves in the pending ids: menus are refreshed whole. */
export const WHOLE_MENU = "whole-menu";

/**
 * How long a kind's pending ids outlive the last event that noted one (the TTL is set again on
 * every request). A live refresh reads and forgets them, or reports them as unlisted, within
 * SYNC_UNLISTED_GIVE_UP_SECONDS; what it bounds is what a company that goes quiet leaves behind
 * after a refresh failed for good (a 4xx). The reconciliation sweep rereads everything anyway.
 */
export const PENDING_REFRESH_TTL_MS = 7 * 24 * 3600_000;

/** Event ids kept per pending id (a flood of events for one order must not grow the note). */
const MAX_EVENT_IDS = 20;

/** The stored note of field `f` of the kind's hash, or nil when absent or damaged (a new event replaces it). */
const NOTE_OF = `
local function noteOf(f)
  local ok, n = pcall(cjson.decode, redis.call("HGET", KEYS[1], f) or "")
  if ok and type(n) == "table" then return n end
end
`;

/**
 * Bumps the id's version and merges the event's hints into its note: the furthest order status seen
 * (a later one is a tighter lower bound), the latest dates, the first event ids; a new event clears
 * any backoff (the record changed: look at once).
 * KEYS: pending. ARGV: field, ttlMs, nowMs, eventId, status, statusRank, createdAt, date.
 */
const NOTE = `${NOTE_OF}
local n = noteOf(ARGV[1]) or { firstNotedAt = tonumber(ARGV[3]) }
n.version = (tonumber(n.version) or 0) + 1
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
redis.call("HSET", KEYS[1], ARGV[1], cjson.encode(n))
redis.call("PEXPIRE", KEYS[1], ARGV[2])
return 0
`;

/** Deletes each field whose version is still the one the refresh read (compare-and-delete). */
const FORGET_READ = `${NOTE_OF}
for i = 1, #ARGV, 2 do
  local n = noteOf(ARGV[i])
  if n and n.version == tonumber(ARGV[i + 1]) then redis.call("HDEL", KEYS[1], ARGV[i]) end
end
return 0
`;

/** Replaces a field's note only if no event noted the id since the refresh read it. ARGV: field, version, note. */
const DEFER = `${NOTE_OF}
local n = noteOf(ARGV[1])
if n and n.version == tonumber(ARGV[2]) then redis.call("HSET", KEYS[1], ARGV[1], ARGV[3]) end
return 0
`;

interface Scripts {
  svcNotePendingId(pending: string, ...args: string[]): Promise<number>;
  svcForgetReadIds(pending: string, ...fieldVersionPairs: string[]): Promise<number>;
  svcDeferPendingId(pending: string, field: string, version: string, note: string): Promise<number>;
}

/** A pending id's field in its kind's hash: restaurant and id, unambiguous whatever they hold. */
const fieldOf = (p: Pick<PendingId, "restaurantId" | "id">) => JSON.stringify([p.restaurantId, p.id]);

export function createRefreshScheduler(opts: {
  redis: Redis | Cluster;
  queue: Queue<RefreshJobData>;
  prefix: string;
  debounceMs: number;
  /** @defaultValue Date.now */
  now?: () => number;
}): RefreshScheduler {
  const { redis, queue, prefix, debounceMs } = opts;
  const now = opts.now ?? Date.now;
  const keys = redisKeys(prefix);
  const scripts = defineScripts<Scripts>(redis, {
    svcNotePendingId: { numberOfKeys: 1, lua: NOTE },
    svcForgetReadIds: { numberOfKeys: 1, lua: FORGET_READ },
    svcDeferPendingId: { numberOfKeys: 1, lua: DEFER },
  });
  const runs = createRefreshRuns({ redis, queue, keys });

  return {
    async request(kind, restaurantId, id = WHOLE_MENU, note = {}) {
      // Note the id, then schedule: a job that starts in between still sees the id. The version
      // bump keeps it pending if a running read already passed it. A status outside the kind's
      // states is dropped.
      const rank = RESOURCES[kind].states?.rank(note.status);
      await scripts.svcNotePendingId(
        keys.pendingRefresh(kind),
        fieldOf({ restaurantId, id }),
        String(PENDING_REFRESH_TTL_MS),
        String(now()),
        note.eventId ?? "",
        rank === undefined ? "" : (note.status ?? ""),
        rank === undefined ? "" : String(rank),
        note.createdAt ?? "",
        note.date ?? "",
      );
      await runs.runWithin(kind, debounceMs);
    },
    async pending(kind) {
      const stored = Object.entries(await redis.hgetall(keys.pendingRefresh(kind)));
      return stored.flatMap(([field, raw]) => parsePending(field, raw));
    },
    async forgetRead(kind, read) {
      if (read.length > 0)
        await scripts.svcForgetReadIds(keys.pendingRefresh(kind), ...read.flatMap((p) => [fieldOf(p), String(p.version)]));
    },
    async defer(kind, pending, note) {
      const stored = JSON.stringify({ ...note, version: pending.version });
      await scripts.svcDeferPendingId(keys.pendingRefresh(kind), fieldOf(pending), String(pending.version), stored);
    },
    ...runs,
  };
}

/** A pending id as stored; one whose field or note does not parse (written by hand, or damaged) is skipped. */
function parsePending(field: string, raw: string): PendingId[] {
  try {
    const [restaurantId, id] = JSON.parse(field) as [string, string];
    const { version, ...note } = JSON.parse(raw) as PendingNote & { version: number };
    if (typeof version !== "number" || typeof note.firstNotedAt !== "number") return [];
    // cjson writes an empty Lua table as {}, never []: keep only a real list.
    return [{ restaurantId, id, version, note: { ...note, eventIds: Array.isArray(note.eventIds) ? note.eventIds : [] } }];
  } catch {
    return [];
  }
}
