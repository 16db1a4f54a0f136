import { Queue, type Worker } from "bullmq";
import { warnUnlessOutage } from "../redis/redis-outage-log.js";
import type { EventJobData } from "../queue/event-job.js";
import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import { createHandlerRegistry } from "../events/registry.js";
import { collectRateBudget } from "../metrics/collectors.js";
import type { Metrics } from "../metrics/metrics.js";
import type { ChangeOutbox } from "../mirror/change-outbox.js";
import type { EventLog } from "../mirror/event-log.js";
import type { MirrorStore } from "../mirror/store.js";
import { createAttemptRunner } from "../queue/attempt-runner.js";
import { createEventWorker } from "../queue/event-worker.js";
import { withTimeout } from "../queue/with-timeout.js";
import { configuredJobOptions } from "../queue/job-options.js";
import { EVENTS_QUEUE, SYNC_QUEUE } from "../queue/names.js";
import { createStreamConsumer, type StreamConsumer } from "../queue/stream-consumer.js";
import type { RedisClient } from "../redis/connection.js";
import { isPermanentUpstreamError, type ApiClient } from "../upstream/index.js";
import { createChangeRelay, type ChangeRelay } from "./change-relay.js";
import type { AnyEvent } from "../events/catalog.js";
import { perHandlerContext } from "../events/per-handler-context.js";
import type { StepStore } from "../mirror/step-store.js";
import { createDurableSteps } from "./durable-steps.js";
import type { EventHandlers, HandlerContext, SharedHandlerContext } from "./handler-context.js";
import { stepAwareApi } from "./step-aware-api.js";
import { apiNotConfigured } from "./api-not-configured.js";
import { jobLabel, observeJobs } from "./job-observers.js";
import { createSettledEvents, type SettledEvent } from "./settled-events.js";
import { pruneEventLog } from "./prune-event-log.js";
import { watchRecording } from "./recording-health.js";
import { refreshKind } from "./sync/refresh-kind.js";
import { createActivePassLease } from "./sync/active-pass-lease.js";
import { createRefreshJob } from "./sync/refresh-job.js";
import { createRefreshPace } from "./sync/refresh-pace.js";
import { createRefreshScheduler, type RefreshJobData, type RefreshScheduler } from "./sync/refresh-scheduler.js";
import { createMirrorWriter } from "./sync/mirror-writer.js";
import { collectFullTier, enqueueCatchUp, reconcileProcessors, scheduleReconcile, showActiveTier } from "./sync/reconcile-jobs.js";
import { createGapWatch } from "./sync/gap-watch.js";
import type { SyncCheckpoints } from "../mirror/sync-checkpoints.js";
import { createSyncHandlers } from "./sync/sync-handlers.js";
import type { SyncedKind } from "./sync/synced-kinds.js";
import { createSyncWorker, type SyncJobData, type SyncJobProcessors } from "./sync/sync-worker.js";
import { upstreamFromConfig } from "./upstream-from-config.js";
import { traceHandlers } from "../tracing/traced-handlers.js";
import { adoptNamedHandlerKeys, logRegisteredHandlers } from "./registered-handlers.js";
import { createReloadableRegistry } from "./reloadable-registry.js";
import { tracedMirror } from "../tracing/traced-mirror.js";
import { createRefreshLinks } from "../tracing/refresh-links.js";
import type { Tracing } from "../tracing/tracing.js";
import { activeTraceparent } from "../tracing/trace-context.js";

export interface WorkerRole {
  api: ApiClient | undefined;
  /** Retries, replays, change events and entries a dead consumer left. */
  eventsQueue: Queue<EventJobData>;
  syncQueue: Queue<SyncJobData>;
  /** Handles events straight from the edge's ingest stream (their first attempt). */
  streamConsumer: StreamConsumer;
  /** Handles the events queue's jobs. */
  eventWorker: Worker<EventJobData>;
  syncWorker: Worker;
  /** Moves change events from the outbox into the events queue. */
  changeRelay: ChangeRelay;
  /** True while the event log refuses this process's attempts (the database is away or full). */
  recordingFails(): boolean;
  /** The keys of the handlers an event of `type` runs (what a replay may aim at). */
  handlerKeys(type: string): string[];
  /** Swaps in new user handlers (dev's HANDLERS_MODULE reload); a map that does not register throws and changes nothing. */
  reloadHandlers(handlers: readonly EventHandlers[]): void;
  /** Calls `listener` for every event this process settles; returns the unsubscribe function. */
  onSettled(listener: (event: SettledEvent) => void): () => void;
  start(): Promise<void>;
  /** Waits for active jobs up to `deadlineMs`, then closes anyway (their locks expire and they rerun). */
  stop(deadlineMs: number): Promise<void>;
}

const PRUNE_EVERY_MS = 3600_000;

/**
 * The worker side: typed handlers per event (built-in sync plus the user's), every event and
 * handler outcome recorded in the event log, and the sync queue whose refresh and reconcile jobs
 * read the API into the mirror (and whose hourly job prunes the event log).
 */
export function createWorkerRole(deps: {
  config: Config;
  logger: Logger;
  connection: RedisClient;
  mirror: MirrorStore;
  eventLog: EventLog;
  changeOutbox: ChangeOutbox;
  /** Durable steps' results (ctx.step). */
  steps: StepStore;
  /** Where the full reconciliation tier and backfill stand (sync_checkpoints). */
  checkpoints: SyncCheckpoints;
  handlers: readonly EventHandlers[];
  metrics: Metrics;
  /** Given when tracing is on: a span per handler, the refresh job in its event's trace, upstream spans. */
  tracing?: Tracing;
  /** Sync-queue jobs the caller runs (the operator actions a CLI hands over: operator-action-jobs.ts). */
  moreSyncProcessors?: SyncJobProcessors;
}): WorkerRole {
  const { config, logger, connection, eventLog, metrics, tracing } = deps;
  // With tracing on, each mirror write (refreshes, sweeps, handlers) is a span of its trace.
  const mirror = tracing ? tracedMirror(deps.mirror, tracing.tracer) : deps.mirror;
  const prefix = config.queuePrefix;
  const { concurrency, lockMs, maxStalls } = config.worker;

  const upstream = config.api
    ? upstreamFromConfig(config.api, connection, prefix, {
        logger,
        ...(tracing ? { tracer: tracing.tracer } : {}),
        bookingsUpperBoundParam: config.worker.syncBookingsUpperBoundParam,
        onResponse: ({ method, route, status, budget }) => {
          metrics.upstreamRequests.inc({ method, route, status: String(status) });
          if (status === 429) {
            metrics.upstreamRateLimited.inc();
            metrics.budgetRateLimited.inc({ class: budget });
          }
        },
        onSlot: ({ budget, waitedMs }) => {
          metrics.budgetSlots.inc({ class: budget });
          metrics.budgetWaitSeconds.observe({ class: budget }, waitedMs / 1000);
        },
      })
    : undefined;
  const api = upstream?.api;
  if (upstream && config.api) collectRateBudget(metrics, config.api.rate, () => upstream.limiter.state());
  if (!api) logger.warn("API_BASE_URL/API_KEY not set: orders, bookings and menus are not synced into the mirror");

  // Each handler gets its own `step` (steps are keyed by handler) and, inside a step that runs
  // again after an unrecorded run, an API whose writes look for their own effect first.
  const steps = createDurableSteps(deps.steps);
  const handlerApi = api ? stepAwareApi(api, { current: steps.current, mirror }) : apiNotConfigured();
  const withSteps = (ctx: SharedHandlerContext, handlerKey: string, event: AnyEvent): HandlerContext => ({
    ...ctx,
    api: handlerApi,
    step: steps.forHandler({ eventId: event.id, handlerKey, attempt: ctx.attempt, logger: ctx.logger }),
  });

  const eventsQueue = new Queue<EventJobData>(EVENTS_QUEUE, {
    connection,
    prefix,
    defaultJobOptions: configuredJobOptions(config),
    streams: { events: { maxLen: 1000 } },
  });
  eventsQueue.on("error", warnUnlessOutage(logger, "events queue error"));
  const syncQueue = new Queue<SyncJobData>(SYNC_QUEUE, {
    connection,
    prefix,
    defaultJobOptions: {
      ...configuredJobOptions(config),
      // A finished refresh leaves nothing worth keeping; its outcome is logged.
      removeOnComplete: true,
    },
    streams: { events: { maxLen: 1000 } },
    // A refresh job carries the trace of the event that scheduled it (bullmq-otel).
    ...(tracing ? { telemetry: tracing.bullmq } : {}),
  });
  syncQueue.on("error", warnUnlessOutage(logger, "sync queue error"));
  // One active pass at a time across every worker (active-pass-lease.ts); one refresh per kind is the scheduler's.
  const activePassLease = createActivePassLease({ redis: connection, prefix, ttlMs: lockMs });
  const scheduler = createRefreshScheduler({
    redis: connection,
    queue: syncQueue as Queue<RefreshJobData>,
    prefix,
    debounceMs: config.worker.syncDebounceMs,
  });

  // Change events: recorded with each mirror write, relayed into the events queue like any event.
  const changeRelay = createChangeRelay({
    outbox: deps.changeOutbox,
    queue: eventsQueue,
    dedupWindowMs: config.dedupWindowSeconds * 1000,
    intervalMs: config.worker.changeRelayIntervalMs,
    logger,
    ...(tracing ? { tracer: tracing.tracer } : {}),
  });
  const writer = createMirrorWriter(mirror, {
    // With tracing on, a change event's handlers continue the trace of the write that made it.
    ...(tracing ? { traceparent: activeTraceparent } : {}),
    onRecorded(changes) {
      for (const { data } of changes) {
        metrics.mirrorChanges.inc({ kind: data.kind, source: data.source });
        if (data.source === "reconcile") metrics.missedWebhooks.inc({ kind: data.kind });
      }
      // Debug: a busy sync records changes on every write; the metrics above count them.
      logger.debug({ changes: changes.length }, "mirror changes recorded");
      changeRelay.poke();
    },
  });

  const recording = watchRecording(eventLog);
  // With tracing on, each event that asks for a refresh is linked from the refresh's span.
  const refreshLinks = tracing
    ? createRefreshLinks({ redis: connection, prefix, tracer: tracing.tracer, ttlMs: Math.max(600_000, 10 * config.worker.syncDebounceMs) })
    : undefined;
  const requestRefresh: RefreshScheduler = refreshLinks
    ? {
        ...scheduler,
        request: async (kind, restaurantId, id, note) => {
          await refreshLinks.note(kind);
          await scheduler.request(kind, restaurantId, id, note);
        },
      }
    : scheduler;
  // Built whole again when `npm run dev` reloads a changed HANDLERS_MODULE (reloadHandlers below).
  const handlerTable = createReloadableRegistry((handlers) => {
    const built = createHandlerRegistry<HandlerContext>();
    const use = (map: EventHandlers, source: string) => built.use(map, source, tracing ? traceHandlers(tracing.tracer) : undefined);
    use(createSyncHandlers(requestRefresh, { withApi: api !== undefined }), "sync");
    handlers.forEach((map, i) => {
      const source = handlers.length > 1 ? `user${i}` : "user";
      logRegisteredHandlers(logger, source, use(map, source));
    });
    return built;
  }, deps.handlers);
  const registry = handlerTable.registry;

  // One engine for every attempt, the stream's first ones and the events queue's jobs alike.
  const runner = createAttemptRunner<SharedHandlerContext>({
    registry: perHandlerContext(registry, withSteps),
    handlerTimeoutMs: config.worker.handlerTimeoutMs,
    logger,
    eventLog: recording.eventLog,
    makeContext: (_event, attempt, log, signal) => ({ mirror, logger: log, attempt, signal }),
    isPermanent: isPermanentUpstreamError,
  });
  const eventWorker = createEventWorker({
    connection,
    prefix,
    runner,
    concurrency,
    lockMs,
    maxStalls,
    logger,
    heldRetryMs: config.worker.backoffMs,
  });

  const processors: SyncJobProcessors = {
    // Steps go with their events: by when they started, under the same retention.
    "prune-events": async () => ({
      pruned: await pruneEventLog(eventLog, config.eventRetentionDays),
      prunedSteps: await pruneEventLog(deps.steps, config.eventRetentionDays),
    }),
  };
  if (api) {
    const refresh = (kind: SyncedKind) => () =>
      refreshKind({
        api,
        mirror,
        scheduler,
        writer,
        logger,
        kind,
        maxPages: config.worker.syncRefreshMaxPages,
        giveUpMs: config.worker.syncUnlistedGiveUpMs,
        onRead: ({ scope }) => metrics.syncRefreshReads.inc({ kind, scope }),
        onUnlisted: () => metrics.syncUnlisted.inc({ kind }),
      });
    processors.refresh = createRefreshJob({
      pace: createRefreshPace({
        state: () => upstream.limiter.state(),
        share: config.worker.syncRefreshPaceShare,
        maxWaitMs: config.worker.syncRefreshPaceMaxWaitMs,
      }),
      scheduler,
      logger,
      refresh: (kind) => (refreshLinks ? refreshLinks.traced(kind, refresh(kind)) : refresh(kind)()),
    });
    // Fresh from the start, so "stalled" means no full pass completed for a while, not "none yet".
    if (config.worker.reconcileIntervalMs > 0) collectFullTier(metrics, deps.checkpoints, Date.now());
    showActiveTier(metrics, config.worker);
    Object.assign(
      processors,
      reconcileProcessors({
        api,
        mirror,
        checkpoints: deps.checkpoints,
        writer,
        pending: (kind, restaurantId) => scheduler.pending(kind, restaurantId),
        lease: activePassLease,
        queue: syncQueue,
        config: config.worker,
        metrics,
        logger,
      }),
    );
  }
  Object.assign(processors, deps.moreSyncProcessors);
  const syncWorker = createSyncWorker({
    connection,
    prefix,
    queue: syncQueue,
    processors,
    concurrency,
    lockMs,
    maxStalls,
    logger,
    ...(tracing ? { telemetry: tracing.bullmq } : {}),
  });

  const settled = createSettledEvents(eventWorker);
  const streamConsumer = createStreamConsumer({
    connection,
    prefix,
    queue: eventsQueue,
    runner,
    concurrency,
    maxInflightBytes: config.worker.maxInflightBytes,
    // The edge's body limit plus the envelope: a read never asks for more than the budget holds.
    largestEntryBytes: config.maxBodyBytes + 4096,
    attempts: config.worker.attempts,
    backoffMs: config.worker.backoffMs,
    dedupWindowSeconds: config.dedupWindowSeconds,
    batchSize: config.ingest.batchSize,
    claimIdleMs: config.ingest.claimIdleMs,
    logger,
    // Counted as the events queue's jobs are, so one set of metrics covers both paths.
    onSettled: ({ id, type, outcome, seconds }) => {
      const name = jobLabel(type);
      metrics.jobs.inc({ queue: EVENTS_QUEUE, name, outcome });
      if (outcome !== "retried") metrics.jobSeconds.observe({ queue: EVENTS_QUEUE, name }, seconds);
      metrics.eventsConsumed.inc();
      settled.emit({ id, type, outcome, via: "stream" });
    },
    onClaimed: (n) => metrics.eventsClaimed.inc(n),
  });

  // The job schedulers live in Redis: made at start, and again when Redis lost them (gap-watch.ts).
  const schedule = async () => {
    await scheduleReconcile(syncQueue, config.worker, api !== undefined);
    await syncQueue.upsertJobScheduler("prune-events", { every: PRUNE_EVERY_MS }, { name: "prune-events", data: {} });
  };
  const gapWatch = createGapWatch({
    redis: connection,
    prefix,
    checkpoints: deps.checkpoints,
    intervalMs: config.worker.syncWatchIntervalMs,
    restore: async () => {
      await schedule();
      await streamConsumer.ensureGroup();
    },
    ...(api && config.worker.reconcileIntervalMs > 0 ? { catchUp: (gapStart: Date) => enqueueCatchUp(syncQueue, gapStart) } : {}),
    logger,
  });

  const workers = [eventWorker, syncWorker];
  observeJobs(workers, { metrics, logger });
  return {
    api,
    eventsQueue,
    syncQueue,
    streamConsumer,
    eventWorker,
    syncWorker,
    changeRelay,
    recordingFails: () => recording.failing(),
    handlerKeys: (type) => registry.handlersFor(type).map((h) => h.key),
    reloadHandlers: (handlers) => void handlerTable.replace(handlers),
    onSettled: (listener) => settled.on(listener),
    async start() {
      await adoptNamedHandlerKeys(registry.registered(), deps.steps, logger);
      await schedule();
      // Before the workers take jobs: after a gap, the catch-up is queued before the first active tick runs.
      await gapWatch.start();
      for (const w of workers) {
        w.run().catch((err: unknown) => logger.error({ err }, "worker stopped unexpectedly"));
      }
      await Promise.all(workers.map((w) => w.waitUntilReady()));
      await streamConsumer.start();
      changeRelay.start();
    },
    async stop(deadlineMs) {
      // The stream first: the batch in hand is handled, recorded and acknowledged (or left pending
      // for another consumer if it cannot be within the deadline).
      const started = Date.now();
      gapWatch.stop();
      await streamConsumer.stop(deadlineMs);
      deadlineMs = Math.max(0, deadlineMs - (Date.now() - started));
      const graceful = Promise.all(workers.map((w) => w.close()));
      const late = await withTimeout(graceful, deadlineMs, "stop").then(
        () => false,
        () => true,
      );
      if (late) {
        logger.warn("active jobs did not finish before the shutdown deadline; they will run again");
        await Promise.all(workers.map((w) => w.close(true)));
      }
      // After the workers: a sync job finishing above may still record (and poke) changes.
      await changeRelay.stop();
      await Promise.all([eventsQueue.close(), syncQueue.close()]);
    },
  };
}
