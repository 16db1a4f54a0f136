import { hostname } from "node:os";
import { warnUnlessOutage } from "../redis/redis-outage-log.js";
import pLimit from "p-limit";
import { randomUUID } from "node:crypto";
import type { Queue } from "bullmq";
import { Cluster } from "ioredis";
import { setTimeout as delay } from "node:timers/promises";
import { errorMessage } from "../events/dispatch.js";
import type { RedisClient } from "../redis/connection.js";
import { redisKeys } from "../redis/keys.js";
import { DEFAULTS } from "../config/defaults.js";
import type { Logger } from "pino";
import type { AttemptResult, AttemptRunner } from "./attempt-runner.js";
import { firstAttemptSchedule } from "./job-options.js";
import { createInflightEntries, type InflightFigures } from "./inflight-entries.js";
import type { EventJobData } from "./event-job.js";
import { decodeEntry } from "./stream-entry.js";
import { withTimeout } from "./with-timeout.js";
import { createStreamHandoff, entryText, type Entry } from "./stream-handoff.js";

export interface StreamConsumerOptions {
  /** Runs each event's first attempt (deadline, dispatch, record, verdict): the events queue's worker's too. */
  runner: AttemptRunner;
  /** Attempts per event in all: with 1, a failure on the stream is final. */
  attempts: number;
  logger: Logger;
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
  /** Creates the consumer group (and the stream) unless it exists: after Redis lost its data. */
  ensureGroup(): Promise<void>;
  /**
   * Stops reading and starts no handler from then on: the entries read ahead and not started move
   * into the events queue at once; those running finish (handled, recorded, acknowledged) within
   * `deadlineMs`, or stay pending for another consumer to claim.
   */
  stop(deadlineMs?: number): Promise<void>;
  /** True while some attempt of the runner this consumer shares waits for the event log (the database is away): for readiness. */
  waitingOnLog(): boolean;
  /** How many attempts (the stream's and the events queue's) wait for the event log to take them (metrics). */
  attemptsWaitingOnLog(): number;
  /** Entries (and their bytes) read and not yet acknowledged, and the most bytes held at once. */
  inflight(): InflightFigures;
}

/** The default body limit (MAX_BODY_BYTES) and room for the envelope (id, type, receivedAt). */
const LARGEST_ENTRY_BYTES = 1024 * 1024 + 4096;

/**
 * The worker's hot path and the stream's side of delivery: it decides where an event's first
 * attempt comes from (the ingest stream) and where the next goes (the events queue); the attempt
 * runner does the rest. It holds up to `batchSize` entries (and no more than `maxInflightBytes`),
 * reads with a consumer group whenever there is room, runs the handlers of `concurrency` events at
 * once, and settles each entry on its own: the runner's attempt (recorded, group-committed with
 * those that end alongside), the event's continuation in the events queue if any, and only then
 * the entry's acknowledgement. A slow or hung handler holds one slot, never the stream; an event
 * that succeeds first time costs no BullMQ job.
 *
 * While an entry is in flight it is re-claimed (XCLAIM JUSTID) every third of `claimIdleMs`, as a
 * BullMQ worker extends its lock. A consumer that dies leaves its entries pending: after
 * `claimIdleMs` any consumer claims them (XAUTOCLAIM) and moves them into the events queue, where
 * they run again (at least once, as a crashed BullMQ job does), one job per entry however often
 * it is moved. While the event log is away, an attempt holds its entry: with every entry held,
 * nothing new is read, the stream grows, and the edge answers 503.
 */
export function createStreamConsumer(options: StreamConsumerOptions): StreamConsumer {
  const keys = redisKeys(options.prefix).ingest;
  const { logger, queue } = options;
  const batchSize = options.batchSize ?? 500;
  const blockMs = options.blockMs ?? 1000;
  const consumer = `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  const handoff = createStreamHandoff({
    connection: options.connection,
    prefix: options.prefix,
    queue,
    logger,
    attempts: options.attempts,
    backoffMs: options.backoffMs,
    dedupTtlMs: options.dedupWindowSeconds * 1000,
    handlerKeys: (type) => options.runner.handlerKeys(type),
  });
  const maxBytes = options.maxInflightBytes ?? DEFAULTS.workerMaxInflightBytes;
  const largestEntryBytes = options.largestEntryBytes ?? LARGEST_ENTRY_BYTES;
  const inflight = createInflightEntries({ maxEntries: batchSize, maxBytes, largestEntryBytes });
  // Handlers of `concurrency` events run at once; the entries read ahead wait for a slot, so the
  // log's group commit and the acknowledgements still batch (a hung handler holds one slot).
  const handlerSlots = pLimit(options.concurrency);
  // Claimed entries are held until they are in the queue: at most what one byte budget holds.
  const claimCount = Math.max(1, Math.min(batchSize, Math.floor(maxBytes / largestEntryBytes)));
  // Blocking reads get a connection of their own: they would hold up every command behind them.
  let reader: RedisClient | undefined;
  let stopping = false;
  let running: Promise<void> | undefined;
  let heartbeat: NodeJS.Timeout | undefined;
  let nextClaimAt = 0;
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
   * The first attempt of one entry's event, its handlers in one of the consumer's slots; undefined
   * for an entry that can never be an event. Once stop() was called no slot starts handlers: the
   * attempt ends `released` and releaseUnstarted hands the entry on.
   */
  const attempt = async (
    entry: Entry,
    text: string,
  ): Promise<{ data: EventJobData; result: AttemptResult; started: boolean } | undefined> => {
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
    let started = false;
    const result = await options.runner.run({
      data,
      number: 1,
      ...firstAttemptSchedule(options.attempts, options.backoffMs),
      last: options.attempts <= 1,
      delivery: true,
      slot: (run) => handlerSlots(() => (stopping ? undefined : ((started = unstarted.delete(entryId)), run()))),
      stopping: () => stopping,
      logger: logger.child({ eventId: data.id, eventType: data.type, entryId, attempt: 1 }),
    });
    return { data, result, started };
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
    await handoff.moveToQueue(entries, "moved stream entries not yet started into the events queue at a stop");
    for (const [id] of entries) inflight.remove(id);
  };

  /** One entry, start to end: attempt (recorded by the runner), continue in the queue if need be, acknowledge. */
  const handleEntry = async (entry: Entry, text: string) => {
    const [entryId] = entry;
    const started = performance.now();
    const a = await attempt(entry, text);
    if (a) {
      // Released at a stop: releaseUnstarted moves it on (or did, while its attempt waited to start).
      if (a.result.outcome === "released" || (!a.started && !unstarted.delete(entryId))) return;
      await handoff.continueAfter(entryId, a.data, a.result);
    }
    await handoff.ackDelete(entryId);
    const outcome = a?.result.outcome;
    if (a && (outcome === "completed" || outcome === "failed" || outcome === "retried"))
      options.onSettled?.({ id: a.data.id, type: a.data.type, entryId, outcome, seconds: (performance.now() - started) / 1000 });
  };

  const begin = (entry: Entry) => {
    const [entryId] = entry;
    const text = entryText(entry);
    inflight.add(entryId, Buffer.byteLength(text));
    handleEntry(entry, text)
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
    const claim = {
      consumer,
      idleMs: options.claimIdleMs,
      count: claimCount,
      held: (id: string) => inflight.has(id),
      stopping: () => stopping,
    };
    const moved = await handoff.claimAbandoned(r, claim);
    if (moved > 0) options.onClaimed?.(moved);
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
    ensureGroup,
    async start() {
      const connection = options.connection;
      const own: RedisClient = connection instanceof Cluster ? connection.duplicate() : connection.duplicate();
      reader = own;
      own.on("error", warnUnlessOutage(logger, "stream consumer connection error"));
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
      const late = await withTimeout(finished, deadlineMs, "stop").then(
        () => false,
        () => true,
      );
      if (late) {
        logger.warn("stream consumer did not stop in time; its unacknowledged entries will be claimed by another consumer");
        reader?.disconnect();
        await withTimeout(Promise.resolve(running), 1000, "stop").catch(() => undefined);
      }
      clearInterval(heartbeat);
      await reader?.quit().catch(() => reader?.disconnect());
    },
    waitingOnLog: () => options.runner.waitingOnLog() > 0,
    attemptsWaitingOnLog: () => options.runner.waitingOnLog(),
    inflight: () => inflight.figures(),
  };
}
