import { Queue } from "bullmq";
import type { Redis } from "ioredis";
import { createHandlerRegistry, type HandlerMap } from "../../src/events/dispatch.js";
import { createLogger } from "../../src/logging/logger.js";
import { createAttemptRunner, type AttemptRunnerOptions } from "../../src/queue/attempt-runner.js";
import { type EventJobData, EVENTS_QUEUE } from "../../src/queue/events-queue.js";
import { createStreamConsumer, type StreamConsumer, type StreamConsumerOptions } from "../../src/queue/stream-consumer.js";
import { type RedisClient, redisKeys } from "../../src/redis/redis.js";
import { waitFor } from "./wait-for.js";

/**
 * A stream consumer (the worker role's first stage) on a connection of its own, for tests: it runs
 * `handlers` (no handler at all by default) and hands retries and claimed entries to the events queue.
 */
export function startConsumer(
  redis: Redis,
  prefix: string,
  extra: Partial<StreamConsumerOptions> &
    Partial<Pick<AttemptRunnerOptions<object>, "handlerTimeoutMs" | "eventLog">> & { handlers?: HandlerMap<object> } = {},
): { consumer: StreamConsumer; stop(): Promise<void> } {
  const connection = redis.duplicate({ maxRetriesPerRequest: null });
  const queue = new Queue<EventJobData>(EVENTS_QUEUE, { connection, prefix, defaultJobOptions: { removeOnComplete: true } });
  const registry = createHandlerRegistry<object>();
  registry.use(extra.handlers ?? {}, "test");
  const logger = extra.logger ?? createLogger({ level: "silent" });
  const runner = createAttemptRunner<object>({
    registry,
    makeContext: () => ({}),
    logger,
    ...(extra.handlerTimeoutMs !== undefined ? { handlerTimeoutMs: extra.handlerTimeoutMs } : {}),
    ...(extra.eventLog ? { eventLog: extra.eventLog } : {}),
  });
  const consumer = createStreamConsumer({
    connection,
    prefix,
    queue,
    runner,
    concurrency: 10,
    attempts: 3,
    backoffMs: 100,
    dedupWindowSeconds: 3600,
    claimIdleMs: 30_000,
    logger,
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

/** Resolves once the ingest stream is empty and no entry is pending (every event finished or moved into BullMQ). */
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
