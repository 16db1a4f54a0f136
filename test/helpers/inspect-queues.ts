import { Queue, type JobType } from "bullmq";
import { Redis } from "ioredis";
import { redisKeys } from "../../src/redis/redis.js";
import { streamEvents } from "./ingest-stream.js";

/** Another process's queues, opened on a connection of their own to look at what it stored. */
export interface InspectedQueues {
  queues: Queue[];
  /** The event ids carried by the jobs in `states` of the first queue, and by the ingest stream (accepted, not yet moved). */
  eventIds(states: JobType[]): Promise<Set<string>>;
  /** Empties the queues (the shared test Redis keeps nothing) and closes the connection. */
  close(): Promise<void>;
}

export function inspectQueues(redisUrl: string, prefix: string, names: readonly string[]): InspectedQueues {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const queues = names.map((name) => new Queue(name, { connection: redis, prefix }));
  return {
    queues,
    async eventIds(states) {
      const jobs = await queues[0]!.getJobs(states, 0, -1);
      const pending = await streamEvents(redis, prefix);
      return new Set([...jobs.map((j) => (j.data as { id: string }).id), ...pending.map((e) => e.id)]);
    },
    async close() {
      for (const q of queues) {
        // Best-effort cleanup: the queue may already be gone.
        await q.obliterate({ force: true }).catch(() => undefined);
        await q.close();
      }
      await redis.del(redisKeys(prefix).ingest.stream);
      await redis.quit();
    },
  };
}
