import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { loadConfig } from "../src/config/config.js";
import { createLogger } from "../src/logging/logger.js";
import { EVENTS_QUEUE } from "../src/queue/events-queue.js";
import { createService } from "../src/service.js";
import { BENCH_SECRET } from "./lib/pool.js";

/** Jobs/s the worker drains for events that need no API call (review.created: one mirror write). */
export async function benchWorker(opts: {
  redisUrl: string;
  jobs: number;
  concurrency: number;
}): Promise<{ jobs: number; seconds: number; jobsPerSecond: number }> {
  const prefix = `bench-w-${randomUUID().slice(0, 6)}`;
  const redis = new Redis(opts.redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue(EVENTS_QUEUE, { connection: redis, prefix });
  for (let i = 0; i < opts.jobs; i += 1000) {
    await queue.addBulk(
      Array.from({ length: Math.min(1000, opts.jobs - i) }, (_, k) => {
        const id = `evt_${i + k}`;
        return {
          name: "review.created",
          data: {
            id,
            type: "review.created",
            receivedAt: new Date().toISOString(),
            payload: { id, type: "review.created", data: { id: `rev_${i + k}`, restaurantId: `rest_${k % 5}`, rating: 4 } },
          },
          opts: { removeOnComplete: true },
        };
      }),
    );
  }
  const config = loadConfig({
    ROLE: "worker",
    REDIS_URL: opts.redisUrl,
    QUEUE_PREFIX: prefix,
    WORKER_CONCURRENCY: String(opts.concurrency),
    RECONCILE_INTERVAL_SECONDS: "0",
    SIGNING_SECRET: BENCH_SECRET,
    PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
  });
  const service = await createService({ config, logger: createLogger({ level: "error" }) });
  let done = 0;
  const finished = new Promise<void>((resolve) => {
    service.worker!.eventWorker.on("completed", () => {
      if (++done === opts.jobs) resolve();
    });
  });
  const started = performance.now();
  await service.start();
  await finished;
  const seconds = (performance.now() - started) / 1000;
  await service.stop();
  // Best-effort cleanup between runs.
  await queue.obliterate({ force: true }).catch(() => undefined);
  await queue.close();
  await redis.quit();
  return { jobs: opts.jobs, seconds, jobsPerSecond: opts.jobs / seconds };
}
