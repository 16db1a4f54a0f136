import type { Queue } from "bullmq";
import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import type { RunningServer } from "../http/app.js";
import type { Storage } from "../mirror/storage.js";
import { deadlineIn, type Deadline } from "../queue/deadline.js";
import type { RedisClient } from "../redis/redis.js";
import type { WorkerRole } from "../worker/worker-role.js";
import type { MinuteSampler } from "./service-metrics.js";

/**
 * The shutdown's arithmetic (docs/deploy.md): SHUTDOWN_TIMEOUT_MS drains the work in hand (HTTP
 * requests, stream entries, jobs), then every close (the relay's batch, queue handles, Redis, the
 * database) shares CLOSE_GRACE_MS, and the process exits at most EXIT_GRACE_MS past
 * SHUTDOWN_TIMEOUT_MS whatever is pending (serve.ts): 20 s + 5 s = 25 s by default, inside fly's
 * kill_timeout of 30 s.
 */
export const CLOSE_GRACE_MS = 4000;
/** CLOSE_GRACE_MS and a second for the last log lines and the exit itself. */
export const EXIT_GRACE_MS = 5000;

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
 * Stops accepting, finishes in-flight requests and jobs, closes Redis and the database, all by one
 * deadline (`drain`: SHUTDOWN_TIMEOUT_MS from the signal unless given) and what is left of the
 * close grace after it. With Redis or the database gone, a close would otherwise wait for a
 * reconnect that never comes (ioredis queues QUIT; BullMQ's close has no deadline).
 */
export async function stopService(s: StoppingService, drain: Deadline = deadlineIn(s.config.shutdownTimeoutMs)): Promise<void> {
  const { logger } = s;
  const close = drain.plus(CLOSE_GRACE_MS);
  const bounded = (what: string, work: Promise<unknown>) =>
    close.within(work, what).then(
      () => undefined,
      (err: unknown) => logger.warn({ err: (err as Error).message }, `${what}: going on with the shutdown`),
    );
  // The edge and the worker drain side by side, each until the same deadline.
  await Promise.all([s.server?.close(drain.left()), s.worker && bounded("stopping the worker", s.worker.stop({ drain, close }))]);
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
