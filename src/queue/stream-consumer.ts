import { hostname } from "node:os";
import { randomUUID } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import type { Queue } from "bullmq";
import { Cluster } from "ioredis";
import type { Logger } from "pino";
import { DEFAULT_ACCOUNT, DEFAULTS } from "../config/defaults.js";
import { createFairSlots } from "./fair-slots.js";
import { errorMessage } from "../events/dispatch.js";
import { type RedisClient, defineScripts, redisKeys, warnUnlessOutage } from "../redis/redis.js";
import { eventBackoff, type AttemptResult, type AttemptRunner } from "./attempt-runner.js";
import { defaultStopDeadline, type Deadline } from "../base/deadline.js";
import { continuationOf, type ContinuationJob, type ContinuationOptions, type EventJobData } from "./events-queue.js";
import { groupCommit } from "../base/group-commit.js";
import { decodeEntry, ENTRY_FIELD, jobOfEvent, type IngestedEvent } from "./ingest-stream.js";
import { entryJobId } from "./job-ids.js";

// The stream consumer: its options, what its parts share, the entries it holds, how it lets go of
// them, each entry's first attempt, and its read loop.

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
  /** The most of them one account's events hold at once (default `concurrency`: no cap). */
  concurrencyPerAccount?: number;
  /** Entry bytes in flight at once (default DEFAULTS.workerMaxInflightBytes); one entry always runs. */
  maxInflightBytes?: number;
  /** The largest an entry can be (default 1 MiB + 4 KiB: the default body limit and the envelope). */
  largestEntryBytes?: number;
  /** The first retry's backoff (the first attempt runs here, the rest in the queue). */
  backoffMs: number;
  dedupWindowSeconds: number;
  /** Most entries held (read ahead, each acknowledged on its own) and claimed from a dead consumer per call (default 500). */
  batchSize?: number;
  /** Entries another consumer read but did not acknowledge for this long are taken over (it died). */
  claimIdleMs: number;
  /** Called once per event whose first attempt finished here: handled, failed for good, or handed to the queue to retry. */
  onFinished?(event: StreamFinished): void;
  /** Called with the number of entries claimed from a dead consumer and moved into the events queue. */
  onClaimed?(count: number): void;
}

/** One event whose first attempt the consumer finished (worker/worker-role.ts turns it into the role's FinishedEvent). */
interface StreamFinished {
  id: string;
  type: string;
  entryId: string;
  outcome: "completed" | "failed" | "retried";
  seconds: number;
}

export type StreamConsumer = ReturnType<typeof createStreamConsumer>;

/**
 * The worker's hot path and the stream's side of delivery: it decides where an event's first
 * attempt comes from (the ingest stream) and where the next goes (the events queue); the attempt
 * runner does the rest. It holds up to `batchSize` entries (and no more than `maxInflightBytes`),
 * reads with a consumer group whenever there is room (readLoop), runs the handlers of
 * `concurrency` events at once, and finishes each entry on its own (createFirstAttempts): the
 * runner's attempt (recorded, group-committed with those that end alongside), the event's
 * continuation in the events queue if any, and only then the entry's acknowledgement. A slow or
 * hung handler holds one slot, never the stream; an event that succeeds first time costs no
 * BullMQ job.
 *
 * While an entry is in flight it is re-claimed (XCLAIM JUSTID) every third of `claimIdleMs`, as a
 * BullMQ worker extends its lock. A consumer that dies leaves its entries pending: after
 * `claimIdleMs` any consumer claims them (XAUTOCLAIM) and moves them into the events queue, where
 * they run again (at least once, as a crashed BullMQ job does), one job per entry however often
 * it is moved. While the event log is away, an attempt holds its entry: with every entry held,
 * nothing new is read, the stream grows, and the edge answers 503.
 */
export function createStreamConsumer(options: StreamConsumerOptions) {
  const state = createStreamConsumerState(options);
  const { logger, inflight } = state;
  const attempts = createFirstAttempts(state);
  // Blocking reads get a connection of their own: they would hold up every command behind them.
  let reader: RedisClient | undefined;
  let running: Promise<void> | undefined;
  let heartbeat: NodeJS.Timeout | undefined;

  return {
    /** Creates the consumer group (and the stream) unless it exists: after Redis lost its data. */
    ensureGroup: (): Promise<void> => ensureConsumerGroup(state),
    async start(): Promise<void> {
      const connection = options.connection;
      const own: RedisClient = connection instanceof Cluster ? connection.duplicate() : connection.duplicate();
      reader = own;
      own.on("error", warnUnlessOutage(logger, "stream consumer connection error"));
      await ensureConsumerGroup(state);
      heartbeat = setInterval(() => extendClaims(state), Math.max(50, options.claimIdleMs / 3));
      heartbeat.unref();
      running = readLoop(state, own, (entry) => attempts.begin(entry));
    },
    /**
     * Stops reading and starts no handler from then on: the entries read ahead and not started move
     * into the events queue at once; those running finish (handled, recorded, acknowledged) by the
     * shutdown's deadline (default 3 s from now), or stay pending for another consumer to claim.
     */
    async stop(deadline: Deadline = defaultStopDeadline()): Promise<void> {
      state.stopped.abort();
      inflight.wake();
      // The blocking read returns within its BLOCK time, an entry once its handlers end (or their
      // deadline passes); if Redis is gone neither does: cut the reader loose after the deadline.
      // What was read and not acknowledged stays pending, and another consumer claims it.
      const finished = (async () => {
        await running;
        await attempts.releaseUnstarted();
        await inflight.whenEmpty();
      })();
      if (await deadline.missed(finished, "stop")) {
        logger.warn("stream consumer did not stop in time; its unacknowledged entries will be claimed by another consumer");
        reader?.disconnect();
      }
      clearInterval(heartbeat);
      // QUIT waits for a Redis that is away: only a ready reader is asked.
      if (reader?.status === "ready") await reader.quit().catch(() => reader?.disconnect());
      else reader?.disconnect();
    },
    /** True while some attempt of the runner this consumer shares waits for the event log (the database is away): for readiness. */
    waitingOnLog: () => options.runner.waitingOnLog() > 0,
    /** How many attempts (the stream's and the events queue's) wait for the event log to take them (metrics). */
    attemptsWaitingOnLog: () => options.runner.waitingOnLog(),
    /** Entries (and their bytes) read and not yet acknowledged, and the most bytes held at once. */
    inflight: () => inflight.figures(),
  };
}

/** The room an entry takes beside its body: the envelope (id, type, receivedAt). */
export const ENVELOPE_ROOM_BYTES = 4096;

/** The default body limit (MAX_BODY_BYTES) and room for the envelope (id, type, receivedAt). */
const LARGEST_ENTRY_BYTES = DEFAULTS.maxBodyBytes + ENVELOPE_ROOM_BYTES;

/** What one stream consumer's parts (its reads, its attempts, its stop) share. */
type StreamConsumerState = ReturnType<typeof createStreamConsumerState>;

function createStreamConsumerState(options: StreamConsumerOptions) {
  const { logger } = options;
  const batchSize = options.batchSize ?? 500;
  const maxBytes = options.maxInflightBytes ?? DEFAULTS.workerMaxInflightBytes;
  const largestEntryBytes = options.largestEntryBytes ?? LARGEST_ENTRY_BYTES;
  return {
    options,
    logger,
    keys: redisKeys(options.prefix).ingest,
    /** This consumer's name in the group: unique per process and instance. */
    consumer: `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`,
    batchSize,
    /** How long one read waits for new entries. */
    blockMs: 1000,
    /** Claimed entries are held until they are in the queue: at most what one byte budget holds. */
    claimCount: Math.max(1, Math.min(batchSize, Math.floor(maxBytes / largestEntryBytes))),
    handoff: createStreamHandoff(options),
    inflight: createInflightEntries({ maxEntries: batchSize, maxBytes, largestEntryBytes }),
    /**
     * Handlers of `concurrency` events run at once; the entries read ahead wait for a slot, so the
     * log's group commit and the acknowledgements still batch (a hung handler holds one slot). The
     * slots go round-robin across accounts: one company's flood waits in its own line.
     */
    handlerSlots: createFairSlots(options.concurrency, options.concurrencyPerAccount),
    /** Entries read and waiting for a handler slot: what a stop hands on instead of starting. */
    unstarted: new Map<string, Entry>(),
    /** Aborted once by stop(): nothing new is read or started from then on, and the read loop's pauses end. */
    stopped: new AbortController(),
  };
}

interface InflightLimits {
  /** Entries read ahead and not yet acknowledged, at most (INGEST_BATCH_SIZE). */
  maxEntries: number;
  /** Entry bytes at once (WORKER_MAX_INFLIGHT_BYTES). */
  maxBytes: number;
  /** The largest an unread entry can be: a read asks for no more entries than the bytes left hold at this size. */
  largestEntryBytes: number;
}

/**
 * What a stream consumer holds: entries read and not yet acknowledged, each finished on its own, so
 * a slow one never holds up the others. Entries are sized only once read, so a read asks for as many as the bytes left
 * could hold at the largest size an entry can have; one entry always fits when none is held, so a
 * single event larger than the whole budget still runs.
 */
export function createInflightEntries(limits: InflightLimits) {
  const held = new Map<string, number>();
  let bytes = 0;
  let peakBytes = 0;
  let roomWaiters: (() => void)[] = [];
  const emptyWaiters: (() => void)[] = [];
  // Each list is taken whole before its waiters run: a waiter may add (or remove) one.
  const wakeRoom = () => roomWaiters.splice(0).forEach((w) => w());
  return {
    /** How many entries the next read may ask for: 0 when full; at least 1 when nothing is held. */
    room(): number {
      const free = limits.maxEntries - held.size;
      const fits = Math.floor((limits.maxBytes - bytes) / Math.max(1, limits.largestEntryBytes));
      return Math.max(held.size === 0 ? 1 : 0, Math.min(free, fits));
    },
    add(entryId: string, size: number): void {
      held.set(entryId, size);
      bytes += size;
      peakBytes = Math.max(peakBytes, bytes);
    },
    remove(entryId: string): void {
      const size = held.get(entryId);
      if (size === undefined) return;
      held.delete(entryId);
      bytes -= size;
      wakeRoom();
      if (held.size === 0) emptyWaiters.splice(0).forEach((w) => w());
    },
    has: (entryId: string) => held.has(entryId),
    ids: () => [...held.keys()],
    /** Entries and bytes held, and `peakBytes`: the most bytes held at once since the consumer was made. */
    figures: () => ({ entries: held.size, bytes, peakBytes }),
    /** Resolves when an entry is removed, after `timeoutMs`, or on wake(), whichever comes first. */
    whenRoom(timeoutMs: number): Promise<void> {
      return new Promise<void>((resolve) => {
        const timer = setTimeout(done, timeoutMs);
        timer.unref();
        function done() {
          clearTimeout(timer);
          roomWaiters = roomWaiters.filter((w) => w !== done);
          resolve();
        }
        roomWaiters.push(done);
      });
    },
    /** Resolves once nothing is held. */
    whenEmpty(): Promise<void> {
      if (held.size === 0) return Promise.resolve();
      return new Promise<void>((resolve) => emptyWaiters.push(resolve));
    },
    /** Resolves every pending whenRoom (a stop). */
    wake: wakeRoom,
  };
}

/** An ingest stream entry as XREADGROUP and XAUTOCLAIM return it. */
type Entry = [id: string, fields: string[]];

/** The text of an entry's one field (its event). */
const entryText = ([, fields]: Entry): string => fields[fields.indexOf(ENTRY_FIELD) + 1] ?? "";

// Acknowledge and delete in one call, so the stream holds exactly the events no consumer finished.
const ACK_DELETE = `
redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 2))
return redis.call('XDEL', KEYS[1], unpack(ARGV, 2))`;

interface HandoffCommands {
  svcStreamAckDelete(stream: string, group: string, ...ids: string[]): Promise<number>;
}

/** How a stream consumer lets go of entries: finished (acknowledged) or handed to the events queue. */
function createStreamHandoff(options: StreamConsumerOptions) {
  const { stream, group } = redisKeys(options.prefix).ingest;
  const continuation: ContinuationOptions = {
    attempts: options.attempts,
    backoffMs: options.backoffMs,
    dedupTtlMs: options.dedupWindowSeconds * 1000,
    handlerKeys: (type) => options.runner.handlerKeys(type),
  };
  const redis = defineScripts<HandoffCommands>(options.connection, { svcStreamAckDelete: { numberOfKeys: 1, lua: ACK_DELETE } });
  const ackDeleteAll = async (ids: string[]) => {
    await redis.svcStreamAckDelete(stream, group, ...ids);
    return ids;
  };
  // Entries that finish together are acknowledged together, and their jobs added in one addBulk:
  // one round trip each per I/O turn, while no entry waits for another's handlers.
  const ackDelete = groupCommit<string, string>(ackDeleteAll, 500);
  const addJob = groupCommit<ContinuationJob, unknown>((jobs) => options.queue.addBulk(jobs), 500);
  return {
    /**
     * Moves entries into the events queue, then acknowledges and deletes them; returns how many
     * became jobs. Idempotent: each job is named after its entry (entryJobIdentity).
     */
    async moveToQueue(entries: Entry[], why: string): Promise<number> {
      options.logger.info({ count: entries.length }, why);
      const jobs = entries.flatMap((entry) => {
        const data = readEntry(options.logger, entry[0], entryText(entry));
        return data ? [jobOfEvent(entry[0], data, continuation.dedupTtlMs)] : [];
      });
      if (jobs.length > 0) await options.queue.addBulk(jobs);
      await ackDeleteAll(entries.map(([id]) => id));
      return jobs.length;
    },
    /** Acknowledges and deletes an entry a consumer finished with (those finished together in one call). */
    ackDelete,
    /** Adds the job an event continues as after its first attempt, if any (continuationOf; those added together in one addBulk). */
    async continueAfter(entryId: string, data: EventJobData, result: AttemptResult): Promise<void> {
      const job = continuationOf(entryId, data, result, continuation);
      if (job) await addJob(job);
    },
  };
}

/**
 * The stream consumer's side of each entry: its event's first attempt (run by the attempt runner
 * in one of the consumer's slots), the event's continuation in the events queue if any, and only
 * then the entry's acknowledgement; each entry finishes on its own.
 */
function createFirstAttempts(state: StreamConsumerState) {
  const { options, logger, handoff, inflight, unstarted } = state;

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
    const data = readEntry(logger, entryId, text);
    if (!data) return undefined;
    unstarted.set(entryId, entry);
    let started = false;
    const result = await options.runner.run({
      data,
      number: 1,
      of: options.attempts,
      // The events queue's backoff: a retry's wait is drawn from it, recorded, and the job carrying the event on waits it.
      backoff: eventBackoff(options.backoffMs),
      delivery: true,
      slot: (run) =>
        state.handlerSlots(data.account ?? DEFAULT_ACCOUNT, () =>
          state.stopped.signal.aborted ? undefined : ((started = unstarted.delete(entryId)), run()),
        ),
      stopping: () => state.stopped.signal.aborted,
      // Should it be retried, the event waits in the job named after its entry (continuationOf).
      job: entryJobId(entryId),
      logger: logger.child({ eventId: data.id, eventType: data.type, entryId, attempt: 1 }),
    });
    return { data, result, started };
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
      options.onFinished?.({ id: a.data.id, type: a.data.type, entryId, outcome, seconds: (performance.now() - started) / 1000 });
  };

  return {
    /** Holds the entry in flight and runs it start to end, in the background. */
    begin(entry: Entry): void {
      const [entryId] = entry;
      const text = entryText(entry);
      inflight.add(entryId, Buffer.byteLength(text));
      handleEntry(entry, text)
        // A step that failed (Redis away) leaves the entry pending: no longer kept by the heartbeat,
        // it is claimed after claimIdleMs and runs again from the events queue.
        .catch((err: unknown) => logger.warn({ entryId, err: errorMessage(err) }, "could not finish a stream entry; it will be claimed"))
        .finally(() => inflight.remove(entryId));
    },
    /**
     * At a stop, the entries read ahead whose handlers have not started go into the events queue at
     * once (as claimed entries do), where any worker takes them now rather than after claimIdleMs.
     * Their slot callbacks still run later (the slots cannot drop them) and start nothing.
     */
    async releaseUnstarted(): Promise<void> {
      const entries = [...unstarted.values()];
      unstarted.clear();
      if (entries.length === 0) return;
      await handoff.moveToQueue(entries, "moved stream entries not yet started into the events queue at a stop");
      for (const [id] of entries) inflight.remove(id);
    },
  };
}

/** Creates the consumer group (and the stream) unless it exists: at start, and after Redis lost its data. */
async function ensureConsumerGroup(state: StreamConsumerState): Promise<void> {
  const { keys } = state;
  // "0": the edge may have appended before any consumer existed.
  await state.options.connection.xgroup("CREATE", keys.stream, keys.group, "0", "MKSTREAM").catch((err: unknown) => {
    if (!(err instanceof Error) || !err.message.includes("BUSYGROUP")) throw err;
  });
}

/** Keeps the entries in flight ours (a BullMQ worker's lock extension); finished ones drop out. */
function extendClaims(state: StreamConsumerState): void {
  const ids = state.inflight.ids();
  if (ids.length === 0) return;
  const { keys } = state;
  void state.options.connection.call("XCLAIM", keys.stream, keys.group, state.consumer, "0", ...ids, "JUSTID").catch(() => undefined);
}

/** Moves entries a dead consumer (or this one, before a lost reply) left pending into the events queue. */
async function claimAbandoned(state: StreamConsumerState, reader: RedisClient): Promise<void> {
  const { keys } = state;
  let cursor = "0-0";
  let moved = 0;
  // A page of claimCount at a time (XAUTOCLAIM on the reader); entries this consumer holds stay its own.
  do {
    const [next, entries] = (await reader.xautoclaim(
      keys.stream,
      keys.group,
      state.consumer,
      state.options.claimIdleMs,
      cursor,
      "COUNT",
      state.claimCount,
    )) as [string, (Entry | null)[]];
    const live = entries.filter((e): e is Entry => e !== null && !state.inflight.has(e[0]));
    if (live.length > 0)
      moved += await state.handoff.moveToQueue(
        live,
        "claimed stream entries a stopped consumer left pending; they continue in the events queue",
      );
    cursor = next;
  } while (cursor !== "0-0" && !state.stopped.signal.aborted);
  if (moved > 0) state.options.onClaimed?.(moved);
}

/** Reads as many new entries as there is room for (blocking up to blockMs) and begins each. */
async function readStep(state: StreamConsumerState, reader: RedisClient, begin: (entry: Entry) => void): Promise<void> {
  const { inflight, keys } = state;
  const room = Math.min(inflight.room(), state.batchSize);
  if (room === 0) {
    await inflight.whenRoom(state.blockMs);
    return;
  }
  const reply = (await reader.xreadgroup(
    "GROUP",
    keys.group,
    state.consumer,
    "COUNT",
    room,
    "BLOCK",
    state.blockMs,
    "STREAMS",
    keys.stream,
    ">",
  )) as [string, Entry[]][] | null;
  for (const entry of reply?.[0]?.[1] ?? []) begin(entry);
}

/**
 * Until the consumer stops: claims abandoned entries every half `claimIdleMs`, and reads new
 * ones whenever there is room. An error (Redis away) is retried with a growing pause; a group
 * that vanished (a flushed or replaced Redis) is made again.
 */
async function readLoop(state: StreamConsumerState, reader: RedisClient, begin: (entry: Entry) => void): Promise<void> {
  let failures = 0;
  let nextClaimAt = 0;
  while (!state.stopped.signal.aborted) {
    try {
      if (Date.now() >= nextClaimAt) {
        await claimAbandoned(state, reader);
        nextClaimAt = Date.now() + Math.max(100, state.options.claimIdleMs / 2);
      }
      await readStep(state, reader, begin);
      failures = 0;
    } catch (err) {
      const message = errorMessage(err);
      // A failed re-creation shows up as the next read's error, and is retried after it.
      if (message.includes("NOGROUP")) await ensureConsumerGroup(state).catch(() => undefined);
      state.logger.warn({ err: message }, "stream consumer error; retrying");
      failures++;
      // A growing pause, cut short when the consumer stops meanwhile.
      const pause = Math.min(50 * 2 ** Math.min(failures, 5), 1000);
      await delay(pause, undefined, { ref: false, signal: state.stopped.signal }).catch(() => undefined);
    }
  }
}

/**
 * An entry's event, or undefined for an entry that can never be one (logged): only this service
 * writes the stream, so an unreadable entry is dropped, never retried.
 */
function readEntry(logger: Logger, entryId: string, text: string): IngestedEvent | undefined {
  try {
    return decodeEntry(text);
  } catch (err) {
    logger.error({ entryId, err: (err as Error).message }, "dropping an unreadable stream entry");
    return undefined;
  }
}
