import { Queue } from "bullmq";
import type { Redis } from "ioredis";
import { createHandlerRegistry, type HandlerMap } from "../../src/events/registry.js";
import { createLogger } from "../../src/logging/logger.js";
import type { EventJobData } from "../../src/queue/event-job.js";
import { EVENTS_QUEUE } from "../../src/queue/names.js";
import { createStreamConsumer, type StreamConsumer, type StreamConsumerOptions } from "../../src/queue/stream-consumer.js";
import type { RedisClient } from "../../src/redis/connection.js";
import { redisKeys } from "../../src/redis/keys.js";
import { waitFor } from "./wait-for.js";

/**
 * A stream consumer (the worker role's first stage) on a connection of its own, for tests: it runs
 * `handlers` (no handler at all by default) and hands retries and claimed entries to the events queue.
 */
export function startConsumer(
  redis: Redis,
  prefix: string,
  extra: Partial<StreamConsumerOptions<object>> & { handlers?: HandlerMap<object> } = {},
): { consumer: StreamConsumer; stop(): Promise<void> } {
  const connection = redis.duplicate({ maxRetriesPerRequest: null });
  const queue = new Queue<EventJobData>(EVENTS_QUEUE, { connection, prefix, defaultJobOptions: { removeOnComplete: true } });
  const registry = createHandlerRegistry<object>();
  registry.use(extra.handlers ?? {}, "test");
  const consumer = createStreamConsumer<object>({
    connection,
    prefix,
    queue,
    registry,
    concurrency: 10,
    attempts: 3,
    backoffMs: 100,
    dedupWindowSeconds: 3600,
    makeContext: () => ({}),
    claimIdleMs: 30_000,
    logger: createLogger({ level: "silent" }),
    ...extra,
  });
  const started = consumer.start();
  return {
    consumer,
    async stop() {
      await started;
      await consumer.stop();
      await queue.close();
      await connection.quit();
    },
  };
}

/** Resolves once the ingest stream is empty and no entry is pending (every event settled or moved into BullMQ). */
export function streamDrained(redis: RedisClient, prefix: string): Promise<true> {
  const { stream, group } = redisKeys(prefix).ingest;
  return waitFor(
    async () => {
      const [length, pending] = await Promise.all([
        redis.xlen(stream),
        redis.xpending(stream, group).catch(() => [0]) as Promise<[number]>,
      ]);
      return length === 0 && pending[0] === 0;
    },
    { what: "the ingest stream to drain" },
  );
}
