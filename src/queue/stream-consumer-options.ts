import type { Queue } from "bullmq";
import type { Logger } from "pino";
import type { RedisClient } from "../redis/redis.js";
import type { AttemptRunner } from "./attempt-runner.js";
import type { EventJobData } from "./event-job.js";

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
  /** Called once per event whose first attempt finished here: handled, failed for good, or handed to the queue to retry. */
  onFinished?(event: StreamFinished): void;
  /** Called with the number of entries claimed from a dead consumer and moved into the events queue. */
  onClaimed?(count: number): void;
}

/** One event whose first attempt the consumer finished (worker/finished-events.ts turns it into the role's FinishedEvent). */
export interface StreamFinished {
  id: string;
  type: string;
  entryId: string;
  outcome: "completed" | "failed" | "retried";
  seconds: number;
}
