import type { Redis } from "ioredis";
import type { EventJobData } from "../../src/queue/event-job.js";
import { decodeEntry, ENTRY_FIELD } from "../../src/queue/stream-entry.js";
import { streamKeys } from "../../src/queue/stream-keys.js";

/** The events the edge accepted that no pump has moved into BullMQ yet, oldest first. */
export async function streamEvents(redis: Redis, prefix: string): Promise<(EventJobData & { entryId: string })[]> {
  const entries = await redis.xrange(streamKeys(prefix).stream, "-", "+");
  return entries.map(([entryId, fields]) => ({ ...decodeEntry(fields[fields.indexOf(ENTRY_FIELD) + 1]!), entryId }));
}
