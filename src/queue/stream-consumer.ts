import { hostname } from "node:os";
import { randomUUID } from "node:crypto";
import type { Queue } from "bullmq";
import { Cluster } from "ioredis";
import { setTimeout as delay } from "node:timers/promises";
import { errorMessage } from "../events/dispatch.js";
import type { RedisClient } from "../redis/connection.js";
import { defineScripts } from "../redis/define-scripts.js";
import { redisKeys } from "../redis/keys.js";
import { continuationOf, type ContinuationOptions } from "./continuation.js";
import type { EventJobData } from "./event-job.js";
import type { EventJournal } from "./event-journal.js";
import { runFirstAttempt, type FirstAttempt, type FirstAttemptOptions } from "./first-attempt.js";
import { decodeEntry, ENTRY_FIELD, jobOfEntry, type EntryJob } from "./stream-entry.js";

/** With FirstAttemptOptions: the registry, attempts in all, makeContext, isPermanent, logger. */
export interface StreamConsumerOptions<Ctx> extends FirstAttemptOptions<Ctx> {
  /** A "worker" connection (maxRetriesPerRequest: null); the consumer duplicates it for its blocking reads. */
  connection: RedisClient;
  prefix: string;
  /** The events queue: retries, dead letters, and entries a dead consumer left, continue there. */
  queue: Queue<EventJobData>;
  /** Handlers of this many events run at once (as a BullMQ worker's concurrency). */
  concurrency: number;
  /** The first retry's backoff (the first attempt runs here, the rest in the queue). */
  backoffMs: number;
  dedupWindowSeconds: number;
  /** The event log: every event taken and each handler's outcome. */
  journal?: EventJournal;
  /** Most entries read (and handled) per batch (default 500). */
  batchSize?: number;
  /** How long one read waits for new entries (default 1000). */
  blockMs?: number;
  /** Entries another consumer read but did not acknowledge for this long are taken over (it died). */
  claimIdleMs: number;
  /** Called once per event the batch settled: handled, failed for good, or handed to the queue to retry. */
  onSettled?(event: StreamSettled): void;
  /** Called with the number of entries claimed from a dead consumer and moved into the events queue. */
  onClaimed?(count: number): void;
}

/** One event the consumer finished with (worker/settled-events.ts turns it into the role's SettledEvent). */
export interface StreamSettled {
  id: string;
  type: string;
  entryId: string;
  outcome: "completed" | "failed" | "retried";
  seconds: number;
}

export interface StreamConsumer {
  start(): Promise<void>;
  /** Finishes the batch in hand (handled, recorded, acknowledged) within `deadlineMs`, then stops reading. */
  stop(deadlineMs?: number): Promise<void>;
}

type Entry = [id: string, fields: string[]];

// Acknowledge and delete in one call, so the stream holds exactly the events no consumer finished.
const ACK_DELETE = `
redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 2))
return redis.call('XDEL', KEYS[1], unpack(ARGV, 2))`;

interface ConsumerCommands {
  svcStreamAckDelete(stream: string, group: string, ...ids: string[]): Promise<number>;
}

/**
 * The worker's hot path: handles events straight from the ingest stream the edge appends to. It
 * reads a batch with a consumer group, runs each event's handlers (`concurrency` events at a
 * time), records every attempt in the event log (group-committed: one statement for the batch),
 * hands the events that must run again to the events queue in one addBulk, and only then
 * acknowledges and deletes the batch. So an event that succeeds first time costs no BullMQ job;
 * retries with backoff, dead letters, replays and change events stay BullMQ's.
 *
 * While a batch runs, its entries are re-claimed (XCLAIM JUSTID) every third of `claimIdleMs`,
 * as a BullMQ worker extends its lock. A consumer that dies leaves its entries pending: after
 * `claimIdleMs` any consumer claims them (XAUTOCLAIM) and moves them into the events queue, where
 * they run again (at least once, as a crashed BullMQ job does). That move names the job after the
 * entry and deduplicates on the event id for the window, so moving an entry twice adds one job.
 */
export function createStreamConsumer<Ctx>(options: StreamConsumerOptions<Ctx>): StreamConsumer {
  const keys = redisKeys(options.prefix).ingest;
  const { logger, registry, queue } = options;
  const batchSize = options.batchSize ?? 500;
  const blockMs = options.blockMs ?? 1000;
  const dedupTtlMs = options.dedupWindowSeconds * 1000;
  const consumer = `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  const redis = defineScripts<ConsumerCommands>(options.connection, { svcStreamAckDelete: { numberOfKeys: 1, lua: ACK_DELETE } });
  // Blocking reads get a connection of their own: they would hold up every command behind them.
  let reader: RedisClient | undefined;
  let stopping = false;
  let running: Promise<void> | undefined;
  let wake: (() => void) | undefined;
  let nextClaimAt = 0;

  const ensureGroup = async () => {
    // "0": the edge may have appended before any consumer existed.
    await options.connection.xgroup("CREATE", keys.stream, keys.group, "0", "MKSTREAM").catch((err: unknown) => {
      if (!(err instanceof Error) || !err.message.includes("BUSYGROUP")) throw err;
    });
  };

  /** The first attempt of one entry's event; undefined for an entry that can never be an event. */
  const attempt = async (entryId: string, fields: string[]): Promise<FirstAttempt | undefined> => {
    let data: EventJobData;
    try {
      data = decodeEntry(fields[fields.indexOf(ENTRY_FIELD) + 1] ?? "");
    } catch (err) {
      // Only this service writes the stream; an unreadable entry can never be handled.
      logger.error({ entryId, err: (err as Error).message }, "dropping an unreadable stream entry");
      return undefined;
    }
    return runFirstAttempt(options, entryId, data);
  };
  const continuationOptions: ContinuationOptions = {
    attempts: options.attempts,
    backoffMs: options.backoffMs,
    dedupTtlMs,
    handlerKeys: (type) => registry.handlersFor(type).map((h) => h.key),
  };

  const handleBatch = async (entries: Entry[]) => {
    const ids = entries.map(([id]) => id);
    // Keep the batch ours while its handlers run (a BullMQ worker's lock extension).
    const heartbeat = setInterval(
      () => void options.connection.call("XCLAIM", keys.stream, keys.group, consumer, "0", ...ids, "JUSTID").catch(() => undefined),
      Math.max(50, options.claimIdleMs / 3),
    );
    try {
      const attempts: (FirstAttempt | undefined)[] = new Array<FirstAttempt | undefined>(entries.length);
      let next = 0;
      await Promise.all(
        Array.from({ length: Math.min(options.concurrency, entries.length) }, async () => {
          for (let i = next++, entry = entries[i]; entry; i = next++, entry = entries[i]) attempts[i] = await attempt(entry[0], entry[1]);
        }),
      );
      // One group-committed write for the batch. An attempt the log refused is not lost: its
      // event continues in the queue, which records it (nothing is handled unrecorded).
      const { journal } = options;
      const recorded = await Promise.all(
        attempts.map(async (a) => {
          if (!a || !journal) return true;
          try {
            await journal.recordAttempt(a.record);
            return true;
          } catch (err) {
            logger.warn(
              { eventId: a.data.id, err: errorMessage(err) },
              "could not record the event's attempt; the events queue retries it",
            );
            return false;
          }
        }),
      );
      const continuations = attempts.map((a, i) => (a ? continuationOf(a, recorded[i] ?? false, continuationOptions) : undefined));
      const jobs = continuations.flatMap((c) => (c?.job ? [c.job] : []));
      if (jobs.length > 0) await queue.addBulk(jobs);
      await redis.svcStreamAckDelete(keys.stream, keys.group, ...ids);
      const now = performance.now();
      attempts.forEach((a, i) => {
        const outcome = continuations[i]?.outcome;
        if (a && outcome)
          options.onSettled?.({ id: a.data.id, type: a.data.type, entryId: a.entryId, outcome, seconds: (now - a.started) / 1000 });
      });
    } finally {
      clearInterval(heartbeat);
    }
  };

  /** Moves entries a dead consumer (or this one, before a lost reply) left pending into the events queue. */
  const claimAbandoned = async (r: RedisClient) => {
    let cursor = "0-0";
    do {
      const [nextCursor, entries] = (await r.xautoclaim(
        keys.stream,
        keys.group,
        consumer,
        options.claimIdleMs,
        cursor,
        "COUNT",
        batchSize,
      )) as [string, (Entry | null)[]];
      const live = entries.filter((e): e is Entry => e !== null);
      if (live.length > 0) {
        logger.info({ count: live.length }, "claimed stream entries a stopped consumer left pending; they continue in the events queue");
        const jobs: EntryJob[] = [];
        for (const [id, fields] of live) {
          try {
            jobs.push(jobOfEntry(id, fields[fields.indexOf(ENTRY_FIELD) + 1] ?? "", dedupTtlMs));
          } catch (err) {
            logger.error({ entryId: id, err: (err as Error).message }, "dropping an unreadable stream entry");
          }
        }
        if (jobs.length > 0) await queue.addBulk(jobs);
        await redis.svcStreamAckDelete(keys.stream, keys.group, ...live.map(([id]) => id));
        options.onClaimed?.(jobs.length);
      }
      cursor = nextCursor;
    } while (cursor !== "0-0" && !stopping);
  };

  const loop = async (r: RedisClient) => {
    let failures = 0;
    while (!stopping) {
      try {
        if (Date.now() >= nextClaimAt) {
          await claimAbandoned(r);
          nextClaimAt = Date.now() + Math.max(100, options.claimIdleMs / 2);
        }
        const reply = (await r.xreadgroup(
          "GROUP",
          keys.group,
          consumer,
          "COUNT",
          batchSize,
          "BLOCK",
          blockMs,
          "STREAMS",
          keys.stream,
          ">",
        )) as [string, Entry[]][] | null;
        const entries = reply?.[0]?.[1] ?? [];
        if (entries.length > 0) await handleBatch(entries);
        failures = 0;
      } catch (err) {
        const message = errorMessage(err);
        // The group (or the stream) vanished: a flushed or replaced Redis. Make it again.
        // A failed re-creation shows up as the next read's error, and is retried after it.
        if (message.includes("NOGROUP")) await ensureGroup().catch(() => undefined);
        // A batch that failed part way stays pending: claimed after claimIdleMs, it runs again in the queue.
        logger.warn({ err: message }, "stream consumer error; retrying");
        failures++;
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, Math.min(50 * 2 ** Math.min(failures, 5), 1000)).unref();
        });
        wake = undefined;
      }
    }
  };

  return {
    async start() {
      const connection = options.connection;
      const own: RedisClient = connection instanceof Cluster ? connection.duplicate() : connection.duplicate();
      reader = own;
      own.on("error", (err: Error) => logger.warn({ err: err.message }, "stream consumer connection error"));
      await ensureGroup();
      running = loop(own);
    },
    async stop(deadlineMs = 3000) {
      stopping = true;
      wake?.();
      // The blocking read returns within its BLOCK time, a batch once its handlers end; if Redis is
      // gone neither does: cut the reader loose after the deadline. What was read and not
      // acknowledged stays pending, and another consumer claims it.
      if ((await Promise.race([running, delay(deadlineMs, undefined, { ref: false }).then(() => "late" as const)])) === "late") {
        logger.warn("stream consumer did not stop in time; its unacknowledged entries will be claimed by another consumer");
        reader?.disconnect();
        await Promise.race([running, delay(1000, undefined, { ref: false })]);
      }
      await reader?.quit().catch(() => reader?.disconnect());
    },
  };
}
