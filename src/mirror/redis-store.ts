import type { Redis } from "ioredis";
import { defineScripts } from "../redis/define-scripts.js";
import { rankOf } from "./rank.js";
import type { MirrorKind, MirrorRecord } from "./store.js";

/**
 * The Redis mirror's own interface: the MirrorStore of before issue 14 (epoch-ms `fetchedAt` from
 * each process's clock, lists by restaurant only). Kept until the service is wired to the
 * PostgreSQL mirror, then deleted with this file.
 */
export interface RedisMirrorStore {
  upsert(kind: MirrorKind, records: readonly MirrorRecord[], fetchedAt: number): Promise<{ written: number; skipped: number }>;
  get(kind: MirrorKind, id: string): Promise<MirrorRecord | undefined>;
  list(kind: MirrorKind, restaurantId: string): Promise<MirrorRecord[]>;
  all(kind: MirrorKind): Promise<MirrorRecord[]>;
  lastWriteAt(kind: MirrorKind): Promise<number | undefined>;
}

// Writes one record unless the stored copy is further along (rank) or was read later (fetchedAt).
// KEYS: data hash, meta hash, restaurant index set, last-write key.
// ARGV: id, fetchedAt, rank, json, now.
const UPSERT_SCRIPT = `
local meta = redis.call("HGET", KEYS[2], ARGV[1])
if meta then
  local sep = string.find(meta, "|", 1, true)
  local oldFetched = tonumber(string.sub(meta, 1, sep - 1))
  local oldRank = tonumber(string.sub(meta, sep + 1))
  local newFetched = tonumber(ARGV[2])
  local newRank = tonumber(ARGV[3])
  if newRank < oldRank or (newRank == oldRank and newFetched < oldFetched) then
    return 0
  end
end
redis.call("HSET", KEYS[1], ARGV[1], ARGV[4])
redis.call("HSET", KEYS[2], ARGV[1], ARGV[2] .. "|" .. ARGV[3])
redis.call("SADD", KEYS[3], ARGV[1])
redis.call("SET", KEYS[4], ARGV[5])
return 1
`;

type UpsertArgs = [dataKey: string, metaKey: string, indexKey: string, lastKey: string, id: string, fetchedAt: number, rank: number, json: string, now: number];

/** The default mirror: one Redis hash per kind, a set per restaurant, guarded upserts in Lua. */
export function createRedisMirror(redis: Redis, prefix = "svc"): RedisMirrorStore {
  const base = (kind: MirrorKind) => `${prefix}:mirror:${kind}`;
  const dataKey = (kind: MirrorKind) => `${base(kind)}:data`;
  const scripts = defineScripts<{ svcMirrorUpsert(...a: UpsertArgs): Promise<number> }>(redis, { svcMirrorUpsert: { numberOfKeys: 4, lua: UPSERT_SCRIPT } });

  return {
    async upsert(kind, records, fetchedAt) {
      const now = Date.now();
      const outcomes = await Promise.all(
        records.map((r) =>
          scripts.svcMirrorUpsert(dataKey(kind), `${base(kind)}:meta`, `${base(kind)}:r:${r.restaurantId}`, `${base(kind)}:last-write`, r.id, fetchedAt, rankOf(kind, r), JSON.stringify(r), now),
        ),
      );
      const written = outcomes.filter((o) => o === 1).length;
      return { written, skipped: records.length - written };
    },
    async get(kind, id) {
      const json = await redis.hget(dataKey(kind), id);
      return json ? (JSON.parse(json) as MirrorRecord) : undefined;
    },
    async list(kind, restaurantId) {
      const ids = await redis.smembers(`${base(kind)}:r:${restaurantId}`);
      if (ids.length === 0) return [];
      const rows = await redis.hmget(dataKey(kind), ...ids.sort());
      return rows.filter((r): r is string => r !== null).map((r) => JSON.parse(r) as MirrorRecord);
    },
    async all(kind) {
      const rows = await redis.hvals(dataKey(kind));
      return rows.map((r) => JSON.parse(r) as MirrorRecord).sort((a, b) => a.id.localeCompare(b.id));
    },
    async lastWriteAt(kind) {
      const value = await redis.get(`${base(kind)}:last-write`);
      return value ? Number(value) : undefined;
    },
  };
}
