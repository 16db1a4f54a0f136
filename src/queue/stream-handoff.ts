import type { Queue } from "bullmq";
import type { Logger } from "pino";
import { type RedisClient, defineScripts, redisKeys } from "../redis/redis.js";
import type { AttemptResult } from "./attempt-runner.js";
import { continuationOf, type ContinuationJob, type ContinuationOptions } from "./continuation.js";
import type { EventJobData } from "./event-job.js";
import { groupCommit } from "./group-commit.js";
import { ENTRY_FIELD, jobOfEntry, type EntryJob } from "./stream-entry.js";

/** An ingest stream entry as XREADGROUP and XAUTOCLAIM return it. */
export type Entry = [id: string, fields: string[]];

/** The text of an entry's one field (its event). */
export const entryText = ([, fields]: Entry): string => fields[fields.indexOf(ENTRY_FIELD) + 1] ?? "";

// Acknowledge and delete in one call, so the stream holds exactly the events no consumer finished.
const ACK_DELETE = `
redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 2))
return redis.call('XDEL', KEYS[1], unpack(ARGV, 2))`;

interface HandoffCommands {
  svcStreamAckDelete(stream: string, group: string, ...ids: string[]): Promise<number>;
}

export interface StreamHandoff {
  /** Acknowledges and deletes an entry a consumer finished with (those finished together in one call). */
  ackDelete(id: string): Promise<void>;
  /** Adds the job an event continues as after its first attempt, if any (continuationOf; those added together in one addBulk). */
  continueAfter(entryId: string, data: EventJobData, result: AttemptResult): Promise<void>;
  /**
   * Moves entries into the events queue, then acknowledges and deletes them; returns how many
   * became jobs. Idempotent: each job is named after its entry (entryJobIdentity).
   */
  moveToQueue(entries: Entry[], why: string): Promise<number>;
  /**
   * Claims (XAUTOCLAIM, on `reader`) the entries idle for `idleMs`, a page of `count` at a time,
   * and moves those not `held` by the claimer into the events queue; returns how many became jobs.
   */
  claimAbandoned(reader: RedisClient, claim: AbandonedClaim): Promise<number>;
}

export interface AbandonedClaim {
  consumer: string;
  idleMs: number;
  count: number;
  held(entryId: string): boolean;
  stopping(): boolean;
}

/** How a stream consumer lets go of entries: finished (acknowledged) or handed to the events queue. */
export function createStreamHandoff(
  options: ContinuationOptions & { connection: RedisClient; prefix: string; queue: Queue<EventJobData>; logger: Logger },
): StreamHandoff {
  const { stream, group } = redisKeys(options.prefix).ingest;
  const redis = defineScripts<HandoffCommands>(options.connection, { svcStreamAckDelete: { numberOfKeys: 1, lua: ACK_DELETE } });
  const ackDeleteAll = async (ids: string[]) => {
    await redis.svcStreamAckDelete(stream, group, ...ids);
    return ids;
  };
  // Entries that finish together are acknowledged together, and their jobs added in one addBulk:
  // one round trip each per I/O turn, while no entry waits for another's handlers.
  const ackDelete = groupCommit<string, string>(ackDeleteAll, 500);
  const addJob = groupCommit<ContinuationJob, unknown>((jobs) => options.queue.addBulk(jobs), 500);
  const moveToQueue: StreamHandoff["moveToQueue"] = async (entries, why) => {
    options.logger.info({ count: entries.length }, why);
    const jobs: EntryJob[] = [];
    for (const entry of entries) {
      try {
        jobs.push(jobOfEntry(entry[0], entryText(entry), options.dedupTtlMs));
      } catch (err) {
        options.logger.error({ entryId: entry[0], err: (err as Error).message }, "dropping an unreadable stream entry");
      }
    }
    if (jobs.length > 0) await options.queue.addBulk(jobs);
    await ackDeleteAll(entries.map(([id]) => id));
    return jobs.length;
  };
  return {
    moveToQueue,
    async claimAbandoned(reader, claim) {
      let cursor = "0-0";
      let moved = 0;
      do {
        const [next, entries] = (await reader.xautoclaim(stream, group, claim.consumer, claim.idleMs, cursor, "COUNT", claim.count)) as [
          string,
          (Entry | null)[],
        ];
        const live = entries.filter((e): e is Entry => e !== null && !claim.held(e[0]));
        if (live.length > 0)
          moved += await moveToQueue(live, "claimed stream entries a stopped consumer left pending; they continue in the events queue");
        cursor = next;
      } while (cursor !== "0-0" && !claim.stopping());
      return moved;
    },
    async ackDelete(id) {
      await ackDelete(id);
    },
    async continueAfter(entryId, data, result) {
      const job = continuationOf(entryId, data, result, options);
      if (job) await addJob(job);
    },
  };
}
