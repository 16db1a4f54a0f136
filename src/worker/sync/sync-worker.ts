import { UnrecoverableError, Worker, type Job } from "bullmq";
import type { RedisClient } from "../../redis/connection.js";
import type { Logger } from "pino";
import { SYNC_QUEUE } from "../../queue/names.js";
import type { MirrorStore } from "../../mirror/store.js";
import { isPermanentUpstreamError, UpstreamRateLimitError, type ApiClient } from "../../upstream/index.js";
import { sweepAll } from "./sweep-all.js";
import { refreshRestaurant } from "./refresh-restaurant.js";
import type { RefreshJobData, RefreshScheduler } from "./refresh-scheduler.js";

export type SyncJobData = RefreshJobData | Record<string, never>;

export interface SyncWorkerOptions {
  connection: RedisClient;
  prefix: string;
  api: ApiClient;
  mirror: MirrorStore;
  scheduler: RefreshScheduler;
  /** At least 2, so a webhook refresh never waits behind a long reconciliation sweep. */
  concurrency: number;
  lockMs: number;
  maxStalls: number;
  logger: Logger;
}

export function createSyncWorker(options: SyncWorkerOptions): Worker<SyncJobData> {
  const { api, mirror, scheduler, logger } = options;
  const worker: Worker<SyncJobData> = new Worker<SyncJobData>(
    SYNC_QUEUE,
    async function processSync(job: Job<SyncJobData>) {
      try {
        if (job.name === "refresh") {
          const { kind, restaurantId } = job.data as RefreshJobData;
          await scheduler.release(kind, restaurantId);
          const outcome = await refreshRestaurant({ api, mirror, scheduler, logger, kind, restaurantId });
          return outcome;
        }
        if (job.name === "reconcile") {
          const totals = await sweepAll({ api, mirror, priority: "low" });
          logger.info({ totals }, "reconciliation done");
          return totals;
        }
        throw new UnrecoverableError(`unknown sync job "${job.name}"`);
      } catch (err) {
        // The client already waited out shared pauses; if the API still says 429, park the whole
        // queue for Retry-After without spending one of the job's attempts.
        if (err instanceof UpstreamRateLimitError) {
          await worker.rateLimit(err.retryAfterMs);
          throw Worker.RateLimitError();
        }
        if (isPermanentUpstreamError(err)) throw new UnrecoverableError((err as Error).message);
        throw err;
      }
    },
    {
      connection: options.connection,
      prefix: options.prefix,
      concurrency: Math.max(2, options.concurrency),
      autorun: false,
      lockDuration: options.lockMs,
      stalledInterval: options.lockMs,
      maxStalledCount: options.maxStalls,
      // BullMQ only honours worker.rateLimit() when a limiter is configured; the real budget is
      // the shared Redis limiter in the API client, so this one is set far above it.
      limiter: { max: 10_000, duration: 1000 },
    },
  );
  worker.on("error", (err) => logger.warn({ err: err.message }, "sync worker error"));
  return worker;
}
