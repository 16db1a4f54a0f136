import { Queue, type Worker } from "bullmq";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import { isKnownEventType } from "../events/catalog.js";
import { createHandlerRegistry } from "../events/registry.js";
import type { Metrics } from "../metrics/metrics.js";
import type { MirrorStore } from "../mirror/store.js";
import { createEventWorker } from "../queue/consumer.js";
import { retentionJobOptions, retryJobOptions } from "../queue/producer.js";
import { createStreamPump, type StreamPump } from "../queue/stream-pump.js";
import type { EventHandlers, HandlerContext } from "../sync/context.js";
import { createRefreshScheduler, type RefreshJobData } from "../sync/refresh-scheduler.js";
import { createSyncHandlers } from "../sync/sync-handlers.js";
import { createSyncWorker, SYNC_QUEUE, type SyncJobData } from "../sync/sync-worker.js";
import { isPermanentUpstreamError, type ApiClient } from "../upstream/index.js";
import { upstreamFromConfig } from "./upstream.js";

export interface WorkerRuntime {
  api: ApiClient | undefined;
  syncQueue: Queue<SyncJobData>;
  eventWorker: Worker;
  syncWorker: Worker | undefined;
  /** Moves events from the edge's ingest stream into the events queue. */
  pump: StreamPump;
  start(): Promise<void>;
  /** Waits for active jobs up to `deadlineMs`, then closes anyway (their locks expire and they rerun). */
  stop(deadlineMs: number): Promise<void>;
}

/**
 * The worker side: typed handlers per event (built-in sync plus the user's), and the sync queue
 * whose refresh and reconcile jobs read the API into the mirror.
 */
export function createWorkerRuntime(deps: {
  config: Config;
  logger: Logger;
  connection: Redis;
  mirror: MirrorStore;
  handlers: readonly EventHandlers[];
  metrics: Metrics;
}): WorkerRuntime {
  const { config, logger, connection, mirror, metrics } = deps;
  const prefix = config.queuePrefix;

  const upstream = config.api
    ? upstreamFromConfig(config.api, connection, prefix, {
        logger,
        onResponse: ({ method, route, status }) => {
          metrics.upstreamRequests.inc({ method, route, status: String(status) });
          if (status === 429) metrics.upstreamRateLimited.inc();
        },
      })
    : undefined;
  const api = upstream?.api;
  const limiter = upstream?.limiter;
  if (limiter && config.api) {
    const max = config.api.rate;
    metrics.addCollector(async () => {
      const state = await limiter.state();
      metrics.rateBudgetRemaining.set(Math.max(0, max - state.inWindow));
      metrics.upstreamPausedSeconds.set(state.pausedForMs / 1000);
    });
  }

  const syncQueue = new Queue<SyncJobData>(SYNC_QUEUE, {
    connection,
    prefix,
    defaultJobOptions: {
      ...retryJobOptions(config.worker.attempts, config.worker.backoffMs),
      ...retentionJobOptions(config.retention),
      // A finished refresh leaves nothing worth keeping; its outcome is logged.
      removeOnComplete: true,
    },
    streams: { events: { maxLen: 1000 } },
  });
  syncQueue.on("error", (err) => logger.warn({ err: err.message }, "sync queue error"));
  const scheduler = createRefreshScheduler({
    redis: connection,
    queue: syncQueue as Queue<RefreshJobData>,
    prefix,
    debounceMs: config.worker.syncDebounceMs,
  });

  const registry = createHandlerRegistry<HandlerContext>();
  registry.use(createSyncHandlers(scheduler, { withApi: api !== undefined }), "sync");
  if (!api) logger.warn("API_BASE_URL/API_KEY not set: orders, bookings and menus are not synced into the mirror");
  deps.handlers.forEach((map, i) => registry.use(map, deps.handlers.length > 1 ? `user${i}` : "user"));

  const eventWorker = createEventWorker<HandlerContext>({
    connection,
    prefix,
    registry,
    concurrency: config.worker.concurrency,
    lockMs: config.worker.lockMs,
    maxStalls: config.worker.maxStalls,
    logger,
    makeContext: (job, _event, log) => ({ api, mirror, logger: log, attempt: job.attemptsMade + 1 }),
    isPermanent: isPermanentUpstreamError,
  });
  const syncWorker = api
    ? createSyncWorker({ connection, prefix, api, mirror, scheduler, concurrency: config.worker.concurrency, lockMs: config.worker.lockMs, maxStalls: config.worker.maxStalls, logger })
    : undefined;

  const pump = createStreamPump({
    connection,
    prefix,
    dedupWindowSeconds: config.dedupWindowSeconds,
    jobOptions: { ...retryJobOptions(config.worker.attempts, config.worker.backoffMs), ...retentionJobOptions(config.retention) },
    batchSize: config.ingest.pumpBatchSize,
    claimIdleMs: config.ingest.pumpClaimIdleMs,
    logger,
    onMoved: (n) => metrics.eventsPumped.inc(n),
  });

  const workers = [eventWorker, ...(syncWorker ? [syncWorker] : [])];
  for (const w of workers) {
    w.on("completed", (job) => {
      metrics.jobs.inc({ queue: w.name, name: jobLabel(job.name), outcome: "completed" });
      if (job.processedOn && job.finishedOn) metrics.jobSeconds.observe({ queue: w.name, name: jobLabel(job.name) }, (job.finishedOn - job.processedOn) / 1000);
    });
    w.on("failed", (job, err) => {
      if (!job) return;
      const final = job.attemptsMade >= (job.opts.attempts ?? 1) || job.finishedOn !== undefined;
      metrics.jobs.inc({ queue: w.name, name: jobLabel(job.name), outcome: final ? "failed" : "retried" });
      // One line per failed attempt; "failed for good" is the dead letter an operator replays.
      logger.warn({ queue: w.name, jobId: job.id, job: job.name, attempt: job.attemptsMade, err: err.message }, final ? "job failed for good" : "job failed, will retry");
    });
  }
  return {
    api,
    syncQueue,
    eventWorker,
    syncWorker,
    pump,
    async start() {
      if (api && config.worker.reconcileIntervalMs > 0) {
        await syncQueue.upsertJobScheduler("reconcile", { every: config.worker.reconcileIntervalMs }, { name: "reconcile", data: {} });
      } else {
        await syncQueue.removeJobScheduler("reconcile");
      }
      for (const w of workers) {
        w.run().catch((err: unknown) => logger.error({ err }, "worker stopped unexpectedly"));
      }
      await Promise.all(workers.map((w) => w.waitUntilReady()));
      await pump.start();
    },
    async stop(deadlineMs) {
      // First stop feeding the queue: the pump finishes (moves and acknowledges) the batch in hand.
      await pump.stop();
      const graceful = Promise.all(workers.map((w) => w.close()));
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<"late">((r) => (timer = setTimeout(() => r("late"), deadlineMs)));
      if ((await Promise.race([graceful, deadline])) === "late") {
        logger.warn("active jobs did not finish before the shutdown deadline; they will run again");
        await Promise.all(workers.map((w) => w.close(true)));
      }
      clearTimeout(timer);
      await syncQueue.close();
    },
  };
}

/** Job names are event types, which senders choose: keep the label set bounded. */
function jobLabel(name: string): string {
  return isKnownEventType(name) || name === "refresh" || name === "reconcile" ? name : "other";
}
