import type { RedisClient } from "../../src/redis/connection.js";
import { createLogger } from "../../src/logging/logger.js";
import { createStreamPump, type StreamPumpOptions } from "../../src/queue/stream-pump.js";
import { redisKeys } from "../../src/redis/keys.js";
import { waitFor } from "./wait-for.js";

/** A stream pump (the worker role's first stage) on a connection of its own, for tests. */
export function startPump(
  redis: import("ioredis").Redis,
  prefix: string,
  extra: Partial<StreamPumpOptions> = {},
): { stop(): Promise<void> } {
  const connection = redis.duplicate({ maxRetriesPerRequest: null });
  const pump = createStreamPump({
    connection,
    prefix,
    dedupWindowSeconds: 3600,
    jobOptions: { removeOnComplete: true },
    claimIdleMs: 30_000,
    logger: createLogger({ level: "silent" }),
    ...extra,
  });
  const started = pump.start();
  return {
    async stop() {
      await started;
      await pump.stop();
      await connection.quit();
    },
  };
}

/** Resolves once the ingest stream is empty and no entry is pending (every event reached BullMQ). */
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
