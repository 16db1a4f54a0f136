import type { Redis } from "ioredis";
import type { EventJobData } from "../../src/queue/events-queue.js";
import { decodeEntry, ENTRY_FIELD } from "../../src/queue/ingest-stream.js";
import { redisKeys } from "../../src/redis/redis.js";

/** The events the edge accepted that no worker has taken yet, oldest first. */
export async function streamEvents(redis: Redis, prefix: string): Promise<(EventJobData & { entryId: string })[]> {
  const entries = await redis.xrange(redisKeys(prefix).ingest.stream, "-", "+");
  return entries.map(([entryId, fields]) => ({ ...decodeEntry(fields[fields.indexOf(ENTRY_FIELD) + 1]!), entryId }));
}
