import type { Queue, Worker } from "bullmq";
import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import type { Metrics } from "../metrics/metrics.js";
import type { ChangeOutbox } from "../mirror/change-outbox.js";
import type { EventLog } from "../mirror/event-log.js";
import type { StepStore } from "../mirror/step-store.js";
import type { MirrorStore } from "../mirror/store.js";
import type { SyncCheckpoints } from "../mirror/sync-checkpoints.js";
import type { EventJobData } from "../queue/event-job.js";
import { createEventsQueue, createSyncQueue } from "../queue/queues.js";
import type { StreamConsumer } from "../queue/stream-consumer.js";
import type { RedisClient } from "../redis/redis.js";
import { tracedMirror, type Tracing } from "../tracing/tracing.js";
import type { ApiClient } from "../upstream/index.js";
import { createChangeFeed } from "./change-feed.js";
import type { ChangeRelay } from "./change-relay.js";
import { createEventDelivery } from "./event-delivery.js";
import type { FinishedEvent } from "./finished-events.js";
import type { EventHandlers } from "./handler-context.js";
import { createHandlerTable } from "./handler-table.js";
import { observeJobs } from "./job-observers.js";
import { meteredUpstream } from "./metered-upstream.js";
import { adoptNamedHandlerKeys } from "./registered-handlers.js";
import { createRefreshRequests } from "../sync/refresh-queue.js";
import { syncProcessors } from "./sync-processors.js";
import { createSyncSchedules } from "./sync-schedules.js";
import { createSyncWorker, type SyncJobData, type SyncJobProcessors } from "./sync-worker.js";
import { workerLifecycle, type StopDeadlines } from "./worker-lifecycle.js";

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
  /** Calls `listener` for every attempt this process finishes (either path); returns the unsubscribe function. */
  onFinished(listener: (event: FinishedEvent) => void): () => void;
  start(): Promise<void>;
  /**
   * Drains (stream entries, active jobs) until the `drain` deadline, then aborts upstream reads in
   * flight and closes anyway (their jobs rerun); the relay and the queues close by `close`.
   */
  stop(deadlines: StopDeadlines): Promise<void>;
}

export interface WorkerRoleDeps {
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
}

/**
 * The worker side: typed handlers per event (built-in sync plus the user's), every event and
 * handler outcome recorded in the event log, and the sync queue whose refresh and reconcile jobs
 * read the API into the mirror (and whose hourly job prunes the event log). Built in steps: the
 * queues, the upstream, the change feed (relay), the refresh requests, the handler table, event
 * delivery, the sync jobs and their schedules.
 */
export function createWorkerRole(deps: WorkerRoleDeps): WorkerRole {
  const { config, logger, connection, metrics, tracing } = deps;
  // With tracing on, each mirror write (refreshes, sweeps, handlers) is a span of its trace.
  const mirror = tracing ? tracedMirror(deps.mirror, tracing.tracer) : deps.mirror;
  const eventsQueue = createEventsQueue({ connection, config, logger });
  // A refresh job carries the trace of the event that scheduled it (bullmq-otel).
  const syncQueue = createSyncQueue<SyncJobData>({ connection, config, logger, ...(tracing ? { telemetry: tracing.bullmq } : {}) });
  // Aborted at the shutdown's drain deadline: a read the API holds never outlasts the stop.
  const upstreamStop = new AbortController();
  const upstream = meteredUpstream({ config, connection, logger, metrics, tracing, signal: upstreamStop.signal });
  const api = upstream?.api;
  const feed = createChangeFeed({ config, logger, metrics, mirror, outbox: deps.changeOutbox, eventsQueue, tracing });
  const refresh = createRefreshRequests({ config, connection, syncQueue, tracing });
  const table = createHandlerTable({ logger, mirror, steps: deps.steps, api, refresh: refresh.queue, handlers: deps.handlers, tracing });
  const delivery = createEventDelivery({
    config,
    logger,
    connection,
    metrics,
    mirror,
    eventLog: deps.eventLog,
    eventsQueue,
    registry: table.dispatch,
  });
  const processors = syncProcessors({ ...deps, mirror, syncQueue, upstream, refresh, writer: feed.writer });
  const syncWorker = createSyncWorker({
    connection,
    prefix: config.queuePrefix,
    queue: syncQueue,
    processors: { ...processors, ...deps.moreSyncProcessors },
    concurrency: config.worker.concurrency,
    lockMs: config.worker.lockMs,
    maxStalls: config.worker.maxStalls,
    logger,
    ...(tracing ? { telemetry: tracing.bullmq } : {}),
  });
  const { streamConsumer, eventWorker } = delivery;
  const schedules = createSyncSchedules({
    config,
    logger,
    connection,
    checkpoints: deps.checkpoints,
    syncQueue,
    syncing: api !== undefined,
    restore: () => streamConsumer.ensureGroup(),
  });
  const workers = [eventWorker, syncWorker];
  observeJobs(workers, { metrics, logger });
  const lifecycle = workerLifecycle({
    logger,
    prepare: () => adoptNamedHandlerKeys(table.registry.registered(), deps.steps, logger),
    schedule: () => schedules.schedule(),
    gapWatch: schedules.gapWatch,
    workers,
    streamConsumer,
    changeRelay: feed.relay,
    queues: [eventsQueue, syncQueue],
    upstreamStop,
  });
  return {
    api,
    eventsQueue,
    syncQueue,
    streamConsumer,
    eventWorker,
    syncWorker,
    changeRelay: feed.relay,
    recordingFails: () => delivery.recording.failing(),
    handlerKeys: (type) => table.registry.handlersFor(type).map((h) => h.key),
    reloadHandlers: (handlers) => void table.replace(handlers),
    onFinished: (listener) => delivery.finished.on(listener),
    start: () => lifecycle.start(),
    stop: (deadlines) => lifecycle.stop(deadlines),
  };
}
