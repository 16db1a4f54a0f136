import { hostname } from "node:os";
import { randomUUID } from "node:crypto";
import { Queue, type DefaultJobOptions } from "bullmq";
import { Cluster } from "ioredis";
import { setTimeout as delay } from "node:timers/promises";
import type { RedisClient } from "../redis/connection.js";
import type { Logger } from "pino";
import { defineScripts } from "../redis/define-scripts.js";
import type { EventJobData } from "./event-job.js";
import { EVENTS_QUEUE } from "./names.js";
import { ENTRY_FIELD, jobOfEntry, type EntryJob } from "./stream-entry.js";
import { redisKeys } from "../redis/keys.js";

/** How long stop() waits for the loop before it disconnects the blocked reader. */
const STOP_BOUND_MS = 3000;

export interface StreamPumpOptions {
  /** A "worker" connection (maxRetriesPerRequest: null); the pump duplicates it for its blocking reads. */
  connection: RedisClient;
  prefix: string;
  queueName?: string;
  dedupWindowSeconds: number;
  /** Retry and retention options of the jobs it adds (as the direct producer's). */
  jobOptions: DefaultJobOptions;
  /** Most entries moved per addBulk (default 500). */
  batchSize?: number;
  /** How long one read waits for new entries; also bounds how long stop() waits (default 1000). */
  blockMs?: number;
  /** Entries another pump read but did not acknowledge for this long are taken over. */
  claimIdleMs: number;
  logger: Logger;
  /** Called with the number of events each batch moved into BullMQ. */
  onMoved?(count: number): void;
}

export interface StreamPump {
  queue: Queue<EventJobData>;
  start(): Promise<void>;
  /** Finishes the batch in hand (moved and acknowledged), then stops reading. */
  stop(): Promise<void>;
}

type Entry = [id: string, fields: string[]];

// Acknowledge and delete in one call, so the stream holds exactly the events not yet in BullMQ.
const ACK_DELETE = `
redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 2))
return redis.call('XDEL', KEYS[1], unpack(ARGV, 2))`;

interface PumpCommands {
  svcStreamAckDelete(stream: string, group: string, ...ids: string[]): Promise<number>;
}

/**
 * Moves events from the ingest stream into BullMQ, so handlers, retries and retention stay as
 * they are. Reads with a consumer group; a batch is added with one addBulk, then acknowledged and
 * deleted. A pump that dies between addBulk and the acknowledgement leaves its entries pending;
 * after `claimIdleMs` any pump claims (XAUTOCLAIM) and moves them again. That second add names
 * the same job (the job id is the entry id) and carries BullMQ's throttle deduplication on the
 * event id for the whole window, which outlives the job's removal on completion: the event is
 * handled once either way.
 */
export function createStreamPump(options: StreamPumpOptions): StreamPump {
  const keys = redisKeys(options.prefix).ingest;
  const { logger } = options;
  const batch = options.batchSize ?? 500;
  const blockMs = options.blockMs ?? 1000;
  const ttl = options.dedupWindowSeconds * 1000;
  const consumer = `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  const queue = new Queue<EventJobData>(options.queueName ?? EVENTS_QUEUE, {
    connection: options.connection,
    prefix: options.prefix,
    defaultJobOptions: options.jobOptions,
    streams: { events: { maxLen: 1000 } },
  });
  queue.on("error", (err) => logger.warn({ err: err.message }, "events queue error"));
  const redis = defineScripts<PumpCommands>(options.connection, { svcStreamAckDelete: { numberOfKeys: 1, lua: ACK_DELETE } });
  // Blocking reads get a connection of their own: they would hold up every command behind them.
  let reader: RedisClient | undefined;
  let stopping = false;
  let running: Promise<void> | undefined;
  let wake: (() => void) | undefined;
  let nextClaimAt = 0;

  const ensureGroup = async () => {
    // "0": the edge may have appended before any pump existed.
    await options.connection.xgroup("CREATE", keys.stream, keys.group, "0", "MKSTREAM").catch((err: unknown) => {
      if (!(err instanceof Error) || !err.message.includes("BUSYGROUP")) throw err;
    });
  };

  const move = async (entries: Entry[]) => {
    const jobs: EntryJob[] = [];
    const ids: string[] = [];
    for (const [id, fields] of entries) {
      ids.push(id);
      const text = fields[fields.indexOf(ENTRY_FIELD) + 1];
      try {
        jobs.push(jobOfEntry(id, text ?? "", ttl));
      } catch (err) {
        // Only this service writes the stream; an unreadable entry can never become a job.
        logger.error({ entryId: id, err: (err as Error).message }, "dropping an unreadable stream entry");
      }
    }
    if (jobs.length > 0) await queue.addBulk(jobs);
    await redis.svcStreamAckDelete(keys.stream, keys.group, ...ids);
    if (jobs.length > 0) options.onMoved?.(jobs.length);
  };

  /** Moves entries other pumps (or this one, before a lost reply) left pending too long. */
  const claimAbandoned = async (r: RedisClient) => {
    let cursor = "0-0";
    do {
      const [next, entries] = (await r.xautoclaim(keys.stream, keys.group, consumer, options.claimIdleMs, cursor, "COUNT", batch)) as [
        string,
        (Entry | null)[],
      ];
      const live = entries.filter((e): e is Entry => e !== null);
      if (live.length > 0) {
        logger.info({ count: live.length }, "claimed stream entries another pump left pending");
        await move(live);
      }
      cursor = next;
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
        const reply = (await r.xreadgroup("GROUP", keys.group, consumer, "COUNT", batch, "BLOCK", blockMs, "STREAMS", keys.stream, ">")) as
          [string, Entry[]][] | null;
        const entries = reply?.[0]?.[1] ?? [];
        if (entries.length > 0) await move(entries);
        failures = 0;
      } catch (err) {
        const message = (err as Error).message;
        // The group (or the stream) vanished: a flushed or replaced Redis. Make it again.
        // A failed re-creation shows up as the next read's error, and is retried after it.
        if (message.includes("NOGROUP")) await ensureGroup().catch(() => undefined);
        logger.warn({ err: message }, "stream pump error; retrying");
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
    queue,
    async start() {
      // Its own connection: the blocking read must not hold up the queue's commands.
      const connection = options.connection;
      const own: RedisClient = connection instanceof Cluster ? connection.duplicate() : connection.duplicate();
      reader = own;
      own.on("error", (err: Error) => logger.warn({ err: err.message }, "stream pump connection error"));
      await ensureGroup();
      running = loop(own);
    },
    async stop() {
      stopping = true;
      wake?.();
      // The blocking read returns within its BLOCK time; if Redis is gone it never does: cut the
      // reader loose after a bound. What was read and not acknowledged stays pending, claimed later.
      if ((await Promise.race([running, delay(STOP_BOUND_MS).then(() => "late" as const)])) === "late") {
        logger.warn("stream pump did not stop in time (Redis unreachable?); its unacknowledged entries will be claimed by another pump");
        reader?.disconnect();
        await Promise.race([running, delay(STOP_BOUND_MS)]);
      }
      // Anything read has been moved and acknowledged; what is unread stays in the stream.
      await reader?.quit().catch(() => reader?.disconnect());
      await queue.close();
    },
  };
}
