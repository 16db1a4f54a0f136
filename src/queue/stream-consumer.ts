import { hostname } from "node:os";
import pLimit from "p-limit";
import { randomUUID } from "node:crypto";
import type { Queue } from "bullmq";
import { Cluster } from "ioredis";
import { setTimeout as delay } from "node:timers/promises";
import { errorMessage } from "../events/dispatch.js";
import type { RedisClient } from "../redis/connection.js";
import { defineScripts } from "../redis/define-scripts.js";
import { redisKeys } from "../redis/keys.js";
import { DEFAULTS } from "../config/defaults.js";
import { continuationOf, type ContinuationJob, type ContinuationOptions } from "./continuation.js";
import { groupCommit } from "./group-commit.js";
import { createInflightEntries, type InflightFigures } from "./inflight-entries.js";
import { recordUntilTaken } from "./record-until-taken.js";
import type { EventJobData } from "./event-job.js";
import type { EventJournal } from "./event-journal.js";
import { runFirstAttempt, type FirstAttempt, type FirstAttemptOptions } from "./first-attempt.js";
import { decodeEntry, ENTRY_FIELD, jobOfEntry, type EntryJob } from "./stream-entry.js";

/** With FirstAttemptOptions: the registry, attempts in all, makeContext, handlerTimeoutMs, isPermanent, logger. */
export interface StreamConsumerOptions<Ctx> extends FirstAttemptOptions<Ctx> {
  /** A "worker" connection (maxRetriesPerRequest: null); the consumer duplicates it for its blocking reads. */
  connection: RedisClient;
  prefix: string;
  /** The events queue: retries, dead letters, and entries a dead consumer left, continue there. */
  queue: Queue<EventJobData>;
  /** Events whose handlers run at once (as a BullMQ worker's concurrency); a hung one holds one slot. */
  concurrency: number;
  /** Entry bytes in flight at once (default DEFAULTS.workerMaxInflightBytes); one entry always runs. */
  maxInflightBytes?: number;
  /** The largest an entry can be (default 1 MiB + 4 KiB: the default body limit and the envelope). */
  largestEntryBytes?: number;
  /** The first retry's backoff (the first attempt runs here, the rest in the queue). */
  backoffMs: number;
  dedupWindowSeconds: number;
  /** The event log: every event taken and each handler's outcome. */
  journal?: EventJournal;
  /** Most entries held (read ahead, each acknowledged on its own) and claimed from a dead consumer per call (default 500). */
  batchSize?: number;
  /** How long one read waits for new entries (default 1000). */
  blockMs?: number;
  /** Entries another consumer read but did not acknowledge for this long are taken over (it died). */
  claimIdleMs: number;
  /** Called once per event the consumer settled: handled, failed for good, or handed to the queue to retry. */
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
  /**
   * Stops reading and starts no handler from then on: the entries read ahead and not started move
   * into the events queue at once; those running finish (handled, recorded, acknowledged) within
   * `deadlineMs`, or stay pending for another consumer to claim.
   */
  stop(deadlineMs?: number): Promise<void>;
  /** True while some attempt waits for the event log to take it (the database is away): for readiness. */
  waitingOnLog(): boolean;
  /** How many attempts wait for the event log to take them (metrics). */
  attemptsWaitingOnLog(): number;
  /** Entries (and their bytes) read and not yet acknowledged, and the most bytes held at once. */
  inflight(): InflightFigures;
}

type Entry = [id: string, fields: string[]];

/** The default body limit (MAX_BODY_BYTES) and room for the envelope (id, type, receivedAt). */
const LARGEST_ENTRY_BYTES = 1024 * 1024 + 4096;

// Acknowledge and delete in one call, so the stream holds exactly the events no consumer finished.
const ACK_DELETE = `
redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 2))
return redis.call('XDEL', KEYS[1], unpack(ARGV, 2))`;

interface ConsumerCommands {
  svcStreamAckDelete(stream: string, group: string, ...ids: string[]): Promise<number>;
}

/**
 * The worker's hot path: handles events straight from the ingest stream the edge appends to. It
 * holds up to `batchSize` entries (and no more than `maxInflightBytes` of them), reads with a
 * consumer group whenever there is room, runs the handlers of `concurrency` events at once, and
 * settles each entry on its own: runs its handlers (under the handler deadline), records the attempt in the event log (group-committed
 * with the attempts that end alongside), hands an event that must run again to the events queue,
 * and only then acknowledges and deletes that entry. A slow or hung handler holds one handler slot,
 * never the stream; entries read ahead keep the log's group commit and the acknowledgements batched. An event that succeeds first time costs no BullMQ job; retries with backoff, dead
 * letters, replays and change events stay BullMQ's.
 *
 * While an entry is in flight it is re-claimed (XCLAIM JUSTID) every third of `claimIdleMs`, as a
 * BullMQ worker extends its lock. A consumer that dies leaves its entries pending: after
 * `claimIdleMs` any consumer claims them (XAUTOCLAIM) and moves them into the events queue, where
 * they run again (at least once, as a crashed BullMQ job does). That move names the job after the
 * entry and deduplicates on the event id for the window, so moving an entry twice adds one job.
 *
 * While the event log cannot take an attempt, its entry holds its slot (recordUntilTaken): with
 * every slot waiting, nothing new is read, the stream grows, and the edge answers 503.
 */
export function createStreamConsumer<Ctx>(options: StreamConsumerOptions<Ctx>): StreamConsumer {
  const keys = redisKeys(options.prefix).ingest;
  const { logger, queue } = options;
  const batchSize = options.batchSize ?? 500;
  const blockMs = options.blockMs ?? 1000;
  const dedupTtlMs = options.dedupWindowSeconds * 1000;
  const consumer = `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  const redis = defineScripts<ConsumerCommands>(options.connection, { svcStreamAckDelete: { numberOfKeys: 1, lua: ACK_DELETE } });
  const maxBytes = options.maxInflightBytes ?? DEFAULTS.workerMaxInflightBytes;
  const largestEntryBytes = options.largestEntryBytes ?? LARGEST_ENTRY_BYTES;
  const inflight = createInflightEntries({ maxEntries: batchSize, maxBytes, largestEntryBytes });
  // Handlers of `concurrency` events run at once; the entries read ahead wait for a slot, so the
  // log's group commit and the acknowledgements still batch (a hung handler holds one slot).
  const handlerSlots = pLimit(options.concurrency);
  // Claimed entries are held until they are in the queue: at most what one byte budget holds.
  const claimCount = Math.max(1, Math.min(batchSize, Math.floor(maxBytes / largestEntryBytes)));
  // Entries that settle together are acknowledged together, and their jobs added in one addBulk:
  // one round trip each per I/O turn, while no entry waits for another's handlers.
  const ackDelete = groupCommit<string, string>(async (ids) => {
    await redis.svcStreamAckDelete(keys.stream, keys.group, ...ids);
    return ids;
  }, 500);
  const addJob = groupCommit<ContinuationJob, unknown>((jobs) => queue.addBulk(jobs), 500);
  const continuationOptions: ContinuationOptions = {
    attempts: options.attempts,
    backoffMs: options.backoffMs,
    dedupTtlMs,
    handlerKeys: (type) => options.registry.handlersFor(type).map((h) => h.key),
  };
  // Blocking reads get a connection of their own: they would hold up every command behind them.
  let reader: RedisClient | undefined;
  let stopping = false;
  let running: Promise<void> | undefined;
  let heartbeat: NodeJS.Timeout | undefined;
  let nextClaimAt = 0;
  let waitingOnLog = 0;
  // Entries read and waiting for a handler slot: what a stop hands on instead of starting.
  const unstarted = new Map<string, Entry>();
  const stopped = new AbortController();
  const pause = (ms: number) => delay(ms, undefined, { ref: false, signal: stopped.signal }).catch(() => undefined);

  const ensureGroup = async () => {
    // "0": the edge may have appended before any consumer existed.
    await options.connection.xgroup("CREATE", keys.stream, keys.group, "0", "MKSTREAM").catch((err: unknown) => {
      if (!(err instanceof Error) || !err.message.includes("BUSYGROUP")) throw err;
    });
  };

  /**
   * The first attempt of one entry's event; undefined for an entry that can never be an event,
   * "released" when the consumer stopped before a slot was free (releaseUnstarted moves it on).
   */
  const attempt = async (entry: Entry, text: string): Promise<FirstAttempt | "released" | undefined> => {
    const [entryId] = entry;
    let data: EventJobData;
    try {
      data = decodeEntry(text);
    } catch (err) {
      // Only this service writes the stream; an unreadable entry can never be handled.
      logger.error({ entryId, err: (err as Error).message }, "dropping an unreadable stream entry");
      return undefined;
    }
    unstarted.set(entryId, entry);
    return handlerSlots(async (): Promise<FirstAttempt | "released"> => {
      // Checked as the slot is taken, so once stop() was called no handler starts here.
      if (stopping) return "released" as const;
      unstarted.delete(entryId);
      return runFirstAttempt(options, entryId, data);
    });
  };

  /**
   * At a stop, the entries read ahead whose handlers have not started go into the events queue at
   * once (as claimed entries do), where any worker takes them now rather than after claimIdleMs.
   * Their slot callbacks still run later (p-limit cannot drop them) and start nothing.
   */
  const releaseUnstarted = async () => {
    const entries = [...unstarted.values()];
    unstarted.clear();
    if (entries.length === 0) return;
    await moveToQueue(entries, "moved stream entries not yet started into the events queue at a stop");
    for (const [id] of entries) inflight.remove(id);
  };

  /** Whether the log took the attempt (false: it refused the event); undefined when stopping first. */
  const record = async (a: FirstAttempt): Promise<boolean | undefined> => {
    if (!options.journal) return true;
    const outcome = await recordUntilTaken(a.record, {
      journal: options.journal,
      logger,
      stopping: () => stopping,
      sleep: pause,
      onWaiting: (waiting) => (waitingOnLog += waiting ? 1 : -1),
    });
    return outcome === "stopped" ? undefined : outcome === "recorded";
  };

  /** One entry, start to end: attempt, record, continue in the queue if need be, acknowledge. */
  const settle = async (entry: Entry, text: string) => {
    const [entryId] = entry;
    const a = await attempt(entry, text);
    if (a === "released") return;
    if (!a) {
      await ackDelete(entryId);
      return;
    }
    const recorded = await record(a);
    // Stopping while the log is away: left pending, another consumer claims it into the queue.
    if (recorded === undefined) return;
    const { outcome, job } = continuationOf(a, recorded, continuationOptions);
    if (job) await addJob(job);
    await ackDelete(entryId);
    options.onSettled?.({ id: a.data.id, type: a.data.type, entryId, outcome, seconds: (performance.now() - a.started) / 1000 });
  };

  const begin = (entry: Entry) => {
    const [entryId, fields] = entry;
    const text = fields[fields.indexOf(ENTRY_FIELD) + 1] ?? "";
    inflight.add(entryId, Buffer.byteLength(text));
    settle(entry, text)
      // A step that failed (Redis away) leaves the entry pending: no longer kept by the heartbeat,
      // it is claimed after claimIdleMs and runs again from the events queue.
      .catch((err: unknown) => logger.warn({ entryId, err: errorMessage(err) }, "could not settle a stream entry; it will be claimed"))
      .finally(() => inflight.remove(entryId));
  };

  /** Keeps the entries in flight ours (a BullMQ worker's lock extension); settled ones drop out. */
  const extendClaims = () => {
    const ids = inflight.ids();
    if (ids.length === 0) return;
    void options.connection.call("XCLAIM", keys.stream, keys.group, consumer, "0", ...ids, "JUSTID").catch(() => undefined);
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
        claimCount,
      )) as [string, (Entry | null)[]];
      const live = entries.filter((e): e is Entry => e !== null && !inflight.has(e[0]));
      if (live.length > 0) {
        const moved = await moveToQueue(live, "claimed stream entries a stopped consumer left pending; they continue in the events queue");
        options.onClaimed?.(moved);
      }
      cursor = nextCursor;
    } while (cursor !== "0-0" && !stopping);
  };

  /** Moves entries into the events queue and acknowledges them; returns how many became jobs. */
  const moveToQueue = async (live: Entry[], why: string): Promise<number> => {
    logger.info({ count: live.length }, why);
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
    return jobs.length;
  };

  /** Reads as many new entries as there is room for (blocking up to blockMs) and starts each. */
  const readStep = async (r: RedisClient) => {
    const room = Math.min(inflight.room(), batchSize);
    if (room === 0) {
      await inflight.whenRoom(blockMs);
      return;
    }
    const reply = (await r.xreadgroup("GROUP", keys.group, consumer, "COUNT", room, "BLOCK", blockMs, "STREAMS", keys.stream, ">")) as
      [string, Entry[]][] | null;
    for (const entry of reply?.[0]?.[1] ?? []) begin(entry);
  };

  const loop = async (r: RedisClient) => {
    let failures = 0;
    while (!stopping) {
      try {
        if (Date.now() >= nextClaimAt) {
          await claimAbandoned(r);
          nextClaimAt = Date.now() + Math.max(100, options.claimIdleMs / 2);
        }
        await readStep(r);
        failures = 0;
      } catch (err) {
        const message = errorMessage(err);
        // The group (or the stream) vanished: a flushed or replaced Redis. Make it again.
        // A failed re-creation shows up as the next read's error, and is retried after it.
        if (message.includes("NOGROUP")) await ensureGroup().catch(() => undefined);
        logger.warn({ err: message }, "stream consumer error; retrying");
        failures++;
        await pause(Math.min(50 * 2 ** Math.min(failures, 5), 1000));
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
      heartbeat = setInterval(extendClaims, Math.max(50, options.claimIdleMs / 3));
      heartbeat.unref();
      running = loop(own);
    },
    async stop(deadlineMs = 3000) {
      stopping = true;
      stopped.abort();
      inflight.wake();
      // The blocking read returns within its BLOCK time, an entry once its handlers end (or their
      // deadline passes); if Redis is gone neither does: cut the reader loose after the deadline.
      // What was read and not acknowledged stays pending, and another consumer claims it.
      const finished = (async () => {
        await running;
        await releaseUnstarted();
        await inflight.whenEmpty();
      })();
      if ((await Promise.race([finished, delay(deadlineMs, undefined, { ref: false }).then(() => "late" as const)])) === "late") {
        logger.warn("stream consumer did not stop in time; its unacknowledged entries will be claimed by another consumer");
        reader?.disconnect();
        await Promise.race([running, delay(1000, undefined, { ref: false })]);
      }
      clearInterval(heartbeat);
      await reader?.quit().catch(() => reader?.disconnect());
    },
    waitingOnLog: () => waitingOnLog > 0,
    attemptsWaitingOnLog: () => waitingOnLog,
    inflight: () => inflight.figures(),
  };
}
