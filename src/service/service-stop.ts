import type { Queue } from "bullmq";
import type { Logger } from "pino";
import type { Storage } from "../mirror/storage.js";
import type { Config } from "../config/config.js";
import type { RunningServer } from "../http/app.js";
import { withTimeout } from "../queue/with-timeout.js";
import type { RedisClient } from "../redis/redis.js";
import type { WorkerRole } from "../worker/worker-role.js";
import type { MinuteSampler } from "./service-metrics.js";

/** The deadline of each close step after the workers (queue handles, Redis, the database). */
const CLOSE_STEP_MS = 3000;

/** What a stopping service closes, in this order. */
export interface StoppingService {
  config: Config;
  logger: Logger;
  server: RunningServer | undefined;
  worker: WorkerRole | undefined;
  sampler: MinuteSampler | undefined;
  /** Queue handles the service opened itself (the worker closes its own). */
  ownQueues: readonly Queue[];
  connections: readonly RedisClient[];
  storage: Storage;
}

/**
 * Stops accepting, finishes in-flight requests and jobs, closes Redis and the database. Every
 * step has a deadline: with Redis or the database gone, a close would otherwise wait for a
 * reconnect that never comes (ioredis queues QUIT; BullMQ's close has no deadline).
 */
export async function stopService(s: StoppingService): Promise<void> {
  const { config, logger } = s;
  const bounded = (what: string, work: Promise<unknown>, ms = CLOSE_STEP_MS) =>
    withTimeout(work, ms, what).then(
      () => undefined,
      (err: unknown) => logger.warn({ err: (err as Error).message }, `${what}: going on with the shutdown`),
    );
  await s.server?.close(config.shutdownTimeoutMs);
  if (s.worker) await bounded("stopping the worker", s.worker.stop(config.shutdownTimeoutMs), config.shutdownTimeoutMs + CLOSE_STEP_MS);
  if (s.sampler) await bounded("stopping the minute sampler", s.sampler.stop());
  await bounded("closing the queue handles", Promise.all(s.ownQueues.map((q) => q.close())));
  // QUIT waits for a connection that is down: only a ready one is asked to quit.
  await Promise.all(
    s.connections.map(async (c) => {
      if (c.status === "ready") await bounded("closing Redis", c.quit());
      c.disconnect();
    }),
  );
  await bounded("closing the database", s.storage.close());
}
