import { hostname } from "node:os";
import { randomUUID } from "node:crypto";
import type { JobsOptions, Queue } from "bullmq";
import { Cluster } from "ioredis";
import { setTimeout as delay } from "node:timers/promises";
import type { Logger } from "pino";
import { EventDataError, type AnyEvent } from "../events/catalog.js";
import { dispatchEvent, errorMessage } from "../events/dispatch.js";
import type { HandlerRegistry } from "../events/registry.js";
import type { RedisClient } from "../redis/connection.js";
import { defineScripts } from "../redis/define-scripts.js";
import { redisKeys } from "../redis/keys.js";
import type { EventJobData, HandlerOutcomeData } from "./event-job.js";
import type { EventAttempt, EventJournal } from "./event-journal.js";
import { isPermanentFailure } from "./event-worker.js";
import { remainingRetryOptions } from "./job-options.js";
import { decodeEntry, ENTRY_FIELD, jobOfEntry, type EntryJob } from "./stream-entry.js";

export interface StreamConsumerOptions<Ctx> {
  /** A "worker" connection (maxRetriesPerRequest: null); the consumer duplicates it for its blocking reads. */
  connection: RedisClient;
  prefix: string;
  /** The events queue: retries, and entries a dead consumer left, continue there. */
  queue: Queue<EventJobData>;
  registry: HandlerRegistry<Ctx>;
  /** Handlers of this many events run at once (as a BullMQ worker's concurrency). */
  concurrency: number;
  /** Attempts per event in all (the first runs here) and the first retry's backoff. */
  attempts: number;
  backoffMs: number;
  dedupWindowSeconds: number;
  makeContext(event: AnyEvent, attempt: number, logger: Logger): Ctx;
  /** Errors that no retry can fix (a 4xx from the API other than 429), beside BullMQ's UnrecoverableError. */
  isPermanent?(err: unknown): boolean;
  /** The event log: every event taken and each handler's outcome. */
  journal?: EventJournal;
  /** Most entries read (and handled) per batch (default 500). */
  batchSize?: number;
  /** How long one read waits for new entries (default 1000). */
  blockMs?: number;
  /** Entries another consumer read but did not acknowledge for this long are taken over (it died). */
  claimIdleMs: number;
  logger: Logger;
  /** Called once per event the batch settled: handled, failed for good, or handed to the queue to retry. */
  onSettled?(event: SettledEvent): void;
  /** Called with the number of entries claimed from a dead consumer and moved into the events queue. */
  onClaimed?(count: number): void;
}

export interface SettledEvent {
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

/** What one event's first attempt did, before it is recorded. */
interface Attempt {
  entryId: string;
  data: EventJobData;
  record: EventAttempt;
  /** Handlers to run again (retryable failures): the event continues in the events queue. */
  retry: string[] | undefined;
  /** Why the event failed for good: it is placed in the events queue's failed set. */
  deadLetter?: string;
  started: number;
}

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
  const permanent = (err: unknown) => isPermanentFailure(err, options);
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

  /** Runs one event's handlers; undefined for an entry that can never be an event. */
  const attempt = async (entryId: string, fields: string[]): Promise<Attempt | undefined> => {
    const started = performance.now();
    let data: EventJobData;
    try {
      data = decodeEntry(fields[fields.indexOf(ENTRY_FIELD) + 1] ?? "");
    } catch (err) {
      // Only this service writes the stream; an unreadable entry can never be handled.
      logger.error({ entryId, err: (err as Error).message }, "dropping an unreadable stream entry");
      return undefined;
    }
    const event: AnyEvent = { ...data.payload, id: data.id, type: data.type };
    const log = logger.child({ eventId: event.id, eventType: event.type, entryId, attempt: 1 });
    const handlers: Record<string, HandlerOutcomeData> = {};
    const record = (status: EventAttempt["status"]): EventAttempt => ({
      id: data.id,
      type: data.type,
      payload: data.payload,
      status,
      handlers,
    });
    let result;
    try {
      result = await dispatchEvent(registry, event, options.makeContext(event, 1, log));
    } catch (err) {
      if (!(err instanceof EventDataError)) throw err;
      log.warn({ err: err.message }, "event failed for good");
      return { entryId, data, record: record("failed"), retry: undefined, deadLetter: err.message, started };
    }
    for (const key of result.succeeded) handlers[key] = { status: "ok" };
    for (const f of result.failures) {
      log.warn({ handler: f.key, err: errorMessage(f.error) }, "handler failed");
      handlers[f.key] = { status: "failed", error: errorMessage(f.error) };
    }
    if (result.failures.length === 0) return { entryId, data, record: record("handled"), retry: undefined, started };
    const retrying = options.attempts > 1 && !result.failures.every((f) => permanent(f.error));
    const summary = result.failures.map((f) => `${f.key}: ${errorMessage(f.error)}`).join("; ");
    log.warn({ err: summary }, retrying ? "event failed, will retry" : "event failed for good");
    const failed = result.failures.map((f) => f.key);
    return retrying
      ? { entryId, data, record: record("received"), retry: failed, started }
      : { entryId, data, record: record("failed"), retry: undefined, deadLetter: summary, started };
  };

  /**
   * The events queue job that carries an event on after its first attempt: a retry of the
   * handlers in `only` (with outcomes the log does not hold yet), or a dead letter.
   */
  const continuation = (
    a: Attempt,
    only: string[],
    extra: Pick<EventJobData, "unrecorded" | "deadLetter"> = {},
  ): EntryJob & { opts: JobsOptions } => ({
    name: a.data.type,
    data: { ...a.data, only, attemptsBefore: 1, ...extra },
    opts: {
      ...(extra.deadLetter !== undefined
        ? { attempts: 1 }
        : (remainingRetryOptions(options.attempts, options.backoffMs) ?? { attempts: 1, delay: options.backoffMs })),
      jobId: a.entryId,
      deduplication: { id: a.data.id, ttl: dedupTtlMs },
    },
  });

  const handleBatch = async (entries: Entry[]) => {
    const ids = entries.map(([id]) => id);
    // Keep the batch ours while its handlers run (a BullMQ worker's lock extension).
    const heartbeat = setInterval(
      () => void options.connection.call("XCLAIM", keys.stream, keys.group, consumer, "0", ...ids, "JUSTID").catch(() => undefined),
      Math.max(50, options.claimIdleMs / 3),
    );
    try {
      const attempts: (Attempt | undefined)[] = new Array<Attempt | undefined>(entries.length);
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
      const jobs: (EntryJob & { opts: JobsOptions })[] = [];
      const outcomes: SettledEvent["outcome"][] = [];
      attempts.forEach((a, i) => {
        if (!a) return;
        if (!recorded[i]) {
          // Whatever the attempt's status, the queue runs the handlers that did not succeed again
          // (a permanent failure fails again) and records the outcomes of those that did.
          const ok = Object.entries(a.record.handlers).filter(([, o]) => o.status === "ok");
          const others = registry
            .handlersFor(a.data.type)
            .map((h) => h.key)
            .filter((k) => a.record.handlers[k]?.status !== "ok");
          jobs.push(continuation(a, others, { unrecorded: Object.fromEntries(ok) }));
          outcomes[i] = "retried";
        } else if (a.retry) {
          jobs.push(continuation(a, a.retry));
          outcomes[i] = "retried";
        } else if (a.deadLetter !== undefined) {
          const failed = Object.keys(a.record.handlers).filter((k) => a.record.handlers[k]?.status === "failed");
          jobs.push(continuation(a, failed, { deadLetter: a.deadLetter }));
          outcomes[i] = "failed";
        } else {
          outcomes[i] = "completed";
        }
      });
      if (jobs.length > 0) await queue.addBulk(jobs);
      await redis.svcStreamAckDelete(keys.stream, keys.group, ...ids);
      const now = performance.now();
      attempts.forEach((a, i) => {
        const outcome = outcomes[i];
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
      if ((await Promise.race([running, delay(deadlineMs).then(() => "late" as const)])) === "late") {
        logger.warn("stream consumer did not stop in time; its unacknowledged entries will be claimed by another consumer");
        reader?.disconnect();
        await Promise.race([running, delay(1000)]);
      }
      await reader?.quit().catch(() => reader?.disconnect());
    },
  };
}
