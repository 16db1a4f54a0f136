import { hostname } from "node:os";
import { randomUUID } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import pLimit, { type LimitFunction } from "p-limit";
import type { Logger } from "pino";
import { DEFAULTS } from "../config/defaults.js";
import { redisKeys } from "../redis/redis.js";
import { createInflightEntries, type InflightEntries } from "./inflight-entries.js";
import type { StreamConsumerOptions } from "./stream-consumer-options.js";
import { createStreamHandoff, type Entry, type StreamHandoff } from "./stream-handoff.js";

/** The default body limit (MAX_BODY_BYTES) and room for the envelope (id, type, receivedAt). */
const LARGEST_ENTRY_BYTES = 1024 * 1024 + 4096;

/** What one stream consumer's parts (its reads, its attempts, its stop) share. */
export interface StreamConsumerState {
  options: StreamConsumerOptions;
  logger: Logger;
  keys: ReturnType<typeof redisKeys>["ingest"];
  /** This consumer's name in the group: unique per process and instance. */
  consumer: string;
  batchSize: number;
  blockMs: number;
  /** Claimed entries are held until they are in the queue: at most what one byte budget holds. */
  claimCount: number;
  handoff: StreamHandoff;
  inflight: InflightEntries;
  /**
   * Handlers of `concurrency` events run at once; the entries read ahead wait for a slot, so the
   * log's group commit and the acknowledgements still batch (a hung handler holds one slot).
   */
  handlerSlots: LimitFunction;
  /** Entries read and waiting for a handler slot: what a stop hands on instead of starting. */
  unstarted: Map<string, Entry>;
  /** Set once by stop(): nothing new is read or started from then on. */
  stopping: boolean;
  /** Aborted by stop(): cuts the read loop's pauses short. */
  stopped: AbortController;
}

export function createStreamConsumerState(options: StreamConsumerOptions): StreamConsumerState {
  const { logger } = options;
  const batchSize = options.batchSize ?? 500;
  const maxBytes = options.maxInflightBytes ?? DEFAULTS.workerMaxInflightBytes;
  const largestEntryBytes = options.largestEntryBytes ?? LARGEST_ENTRY_BYTES;
  return {
    options,
    logger,
    keys: redisKeys(options.prefix).ingest,
    consumer: `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`,
    batchSize,
    blockMs: options.blockMs ?? 1000,
    claimCount: Math.max(1, Math.min(batchSize, Math.floor(maxBytes / largestEntryBytes))),
    handoff: createStreamHandoff({
      connection: options.connection,
      prefix: options.prefix,
      queue: options.queue,
      logger,
      attempts: options.attempts,
      backoffMs: options.backoffMs,
      dedupTtlMs: options.dedupWindowSeconds * 1000,
      handlerKeys: (type) => options.runner.handlerKeys(type),
    }),
    inflight: createInflightEntries({ maxEntries: batchSize, maxBytes, largestEntryBytes }),
    handlerSlots: pLimit(options.concurrency),
    unstarted: new Map(),
    stopping: false,
    stopped: new AbortController(),
  };
}

/** Waits `ms`, or less when the consumer stops meanwhile. */
export function pauseUnlessStopped(state: StreamConsumerState, ms: number): Promise<void> {
  return delay(ms, undefined, { ref: false, signal: state.stopped.signal }).catch(() => undefined);
}
