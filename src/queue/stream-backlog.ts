import { type RedisClient, redisKeys } from "../redis/redis.js";

export interface StreamBacklog {
  /** Events in the ingest stream: accepted and not yet finished by a worker (unread, or read and unacknowledged). */
  length: number;
  /** Age of the oldest of them, from its entry id's time (0 when there is none): the consumers' lag. */
  oldestAgeMs: number;
}

/**
 * How far the workers are behind the edge. A consumer deletes what it acknowledged, so the stream
 * holds exactly the events not yet finished, and its first entry is the oldest. Two O(1)-ish reads.
 */
export async function readStreamBacklog(redis: RedisClient, prefix: string, now = Date.now()): Promise<StreamBacklog> {
  const { stream } = redisKeys(prefix).ingest;
  const [length, first] = await Promise.all([redis.xlen(stream), redis.xrange(stream, "-", "+", "COUNT", 1)]);
  const id = first[0]?.[0];
  return { length, oldestAgeMs: id === undefined ? 0 : Math.max(0, now - Number(id.split("-")[0])) };
}
