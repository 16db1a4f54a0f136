import { UnrecoverableError, Worker, type Job, type Queue, type Telemetry } from "bullmq";
import { warnUnlessOutage, type RedisClient } from "../redis/redis.js";
import type { Logger } from "pino";
import { SYNC_QUEUE } from "../queue/events-queue.js";
import { withBoundedText } from "../events/errors.js";
import { isPermanentUpstreamError, UpstreamRateLimitError } from "../upstream/errors.js";
import type { RefreshJobData } from "../sync/refresh-queue.js";
import type { BackfillJobData, FullJobData } from "../sync/reconcile-jobs.js";

/** What the operator API and the schedulers put in reconcile and backfill jobs (reconcile-jobs.ts). */
export type SyncJobData = RefreshJobData | FullJobData | BackfillJobData | Record<string, never>;

/** What runs each named job of the sync queue: a table, not a switch. */
export type SyncJobProcessors = Record<string, (job: Job<SyncJobData>, token?: string) => Promise<unknown>>;

export interface SyncWorkerOptions {
  connection: RedisClient;
  prefix: string;
  /** The sync queue this worker serves: a 429 parks it with `rateLimit`. */
  queue: Pick<Queue, "rateLimit">;
  processors: SyncJobProcessors;
  /** At least 2, so a webhook refresh never waits behind a long reconciliation sweep. */
  concurrency: number;
  lockMs: number;
  maxStalls: number;
  logger: Logger;
  /** BullMQ telemetry when tracing is on: each job runs in the trace of whoever added it. */
  telemetry?: Telemetry;
}

/**
 * The worker of the sync queue (refresh, reconcile and maintenance jobs). A 429 that outlived the
 * client's own waiting parks the whole queue for Retry-After without spending an attempt; an error
 * no retry can fix (a 4xx) fails the job at once.
 */
export function createSyncWorker(options: SyncWorkerOptions): Worker<SyncJobData> {
  const { processors, logger } = options;
  const worker: Worker<SyncJobData> = new Worker<SyncJobData>(
    SYNC_QUEUE,
    async function processSync(job: Job<SyncJobData>, token?: string) {
      const processor = processors[job.name];
      if (!processor) throw new UnrecoverableError(`no processor for sync job "${job.name}" in this worker`);
      try {
        return await processor(job, token);
      } catch (err) {
        withBoundedText(err); // BullMQ keeps the message and the stack in Redis
        if (err instanceof UpstreamRateLimitError) {
          await options.queue.rateLimit(err.retryAfterMs);
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
      // BullMQ only honours a queue's rateLimit() in a worker when a limiter is configured; the real budget is
      // the shared Redis limiter in the API client, so this one is set far above it.
      limiter: { max: 10_000, duration: 1000 },
      ...(options.telemetry ? { telemetry: options.telemetry } : {}),
    },
  );
  worker.on("error", warnUnlessOutage(logger, "sync worker error"));
  return worker;
}
