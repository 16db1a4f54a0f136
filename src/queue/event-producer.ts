import { DEFAULTS } from "../config/defaults.js";
import { randomUUID } from "node:crypto";
import type { DefaultJobOptions, Queue } from "bullmq";
import type { RedisClient } from "../redis/redis.js";
import type { EnqueueInput, EnqueueResult, EventJobData, EventSink } from "./event-job.js";
import { groupCommit } from "./group-commit.js";
import { withTimeout } from "./with-timeout.js";
import { UnstorableEventError } from "./errors.js";
import { EVENTS_QUEUE } from "./names.js";
import { eventRetryOptions } from "./job-options.js";
import { openQueue } from "./queues.js";
import { expectDefined } from "../expect-defined.js";

export interface EventProducerOptions {
  /** A "web" connection (createRedisConnection): fails fast while Redis is away. */
  connection: RedisClient;
  prefix: string;
  queueName?: string;
  dedupWindowSeconds: number;
  /** Deadline for Redis to acknowledge one event. */
  timeoutMs: number;
  jobOptions?: DefaultJobOptions;
  /** Most events written in one round trip (default 256). */
  maxBatch?: number;
  /** Connection errors of the queue (BullMQ emits them; an unheard "error" would crash the process). */
  onError?: (err: Error) => void;
}

export interface EventProducer extends EventSink {
  queue: Queue<EventJobData>;
  close(): Promise<void>;
}

/**
 * Enqueues verified events into BullMQ, once per event id within the deduplication window.
 * BullMQ's throttle-mode deduplication (`{ id, ttl }`) is atomic with the add and keeps its key
 * for the whole ttl even after the job is removed, so a redelivery is dropped whether the first
 * copy is waiting, running or long finished — and an event is only marked seen once it is
 * durably enqueued. Each add carries a fresh job id: when Redis answers with another id, the
 * event was a duplicate. Two duplicates in one batch are still one job: addBulk sends the batch as
 * one pipeline whose add scripts Redis runs in order, and the second sees the first's key.
 */
export function createEventProducer(options: EventProducerOptions): EventProducer {
  const queue = openQueue<EventJobData>(options.queueName ?? EVENTS_QUEUE, {
    connection: options.connection,
    prefix: options.prefix,
    defaultJobOptions: { ...eventRetryOptions(DEFAULTS.jobAttempts, DEFAULTS.jobBackoffMs), ...options.jobOptions },
    // A failed add still fails its own caller.
    onError: options.onError ?? (() => undefined),
  });
  const ttl = options.dedupWindowSeconds * 1000;
  // Each event is serialised alone before it joins a batch: one that cannot be (too deep, a
  // cycle, a BigInt) fails its own caller with a 4xx, never the whole batch with a 503.
  // Concurrent requests share one addBulk (one pipelined round trip); each still answers only
  // once Redis has acknowledged the batch holding its event.
  const add = groupCommit(
    (events: EnqueueInput[]) =>
      // The job holds the parsed payload; the body text a caller may pass is not stored twice.
      queue.addBulk(
        events.map(({ payloadJson: _text, ...event }) => ({
          name: event.type,
          data: event,
          opts: { jobId: randomUUID(), deduplication: { id: event.id, ttl } },
        })),
      ),
    options.maxBatch ?? 256,
    { ms: options.timeoutMs, what: "enqueue" },
  );

  return {
    queue,
    async enqueue(event) {
      assertStorable(event);
      const job = await add(event);
      const jobId = expectDefined(job.opts.jobId, "addBulk returned a job without the jobId it was given");
      return { jobId: job.id ?? jobId, duplicate: job.id !== undefined && job.id !== jobId } satisfies EnqueueResult;
    },
    async ping() {
      await withTimeout(options.connection.ping(), options.timeoutMs, "ping");
    },
    async close() {
      await queue.close();
    },
  };
}

/** Throws UnstorableEventError when BullMQ could not serialise the event (it JSON.stringifies data). */
function assertStorable(event: EventJobData): void {
  try {
    JSON.stringify(event);
  } catch (err) {
    throw new UnstorableEventError(`event ${event.id} cannot be stored: ${(err as Error).message}`, { cause: err });
  }
}
