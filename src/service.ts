import { Queue } from "bullmq";
import type { Hono } from "hono";
import type { Logger } from "pino";
import type { Config } from "./config/config.js";
import { createApp } from "./http/app.js";
import type { AppEnv } from "./http/context.js";
import { NotReadyError } from "./http/health-routes.js";
import { listen, type RunningServer } from "./http/listen.js";
import { mountOperatorOff } from "./http/operator-off.js";
import { mountOperatorRoutes } from "./http/operator-routes.js";
import {
  collectDatabaseHealth,
  collectIngestBacklog,
  collectMirrorLag,
  collectQueueDepths,
  collectStreamConsumer,
} from "./metrics/collectors.js";
import { mountConsole } from "./http/console/console-routes.js";
import type { MirrorReader } from "./http/mirror-routes.js";
import { createConsoleSources, createRecordReader } from "./console-sources.js";
import { createMetrics, type Metrics } from "./metrics/metrics.js";
import { createMinuteSampler, readMinuteSamples } from "./metrics/minute-samples.js";
import { redisKeys } from "./redis/keys.js";
import { webhookMetrics } from "./metrics/webhook-metrics.js";
import type { Database } from "./mirror/database.js";
import type { EventLog } from "./mirror/event-log.js";
import { readEventDetail } from "./mirror/event-detail.js";
import { eventQueryFromParams } from "./mirror/event-query.js";
import { filterFromQuery, validateRecordId } from "./mirror/mirror-filter.js";
import { createRejectionReporter } from "./mirror/rejection-reporter.js";
import { openStorage, type Storage } from "./mirror/storage.js";
import { MIRROR_KINDS, type MirrorKind, type MirrorStore } from "./mirror/store.js";
import { readStreamBacklog } from "./queue/stream-backlog.js";
import { createStreamSink, type StreamSink } from "./queue/stream-sink.js";
import { withTimeout } from "./queue/with-timeout.js";
import { EVENTS_QUEUE, SYNC_QUEUE } from "./queue/names.js";
import { createRedisConnection, type ConnectionKind, type RedisClient } from "./redis/connection.js";
import { logRedisOutages } from "./redis/redis-outage-log.js";
import type { EventHandlers } from "./worker/handler-context.js";
import { createWorkerRole, type WorkerRole } from "./worker/worker-role.js";
import { trackBulkReplays } from "./worker/bulk-replay-progress.js";
import { createOperatorActions } from "./worker/operator-actions.js";
import { createRefreshScheduler, type RefreshJobData } from "./worker/sync/refresh-scheduler.js";
import { OPERATOR_ACTION_JOB, runOperatorActionJob } from "./worker/operator-action-jobs.js";
import { configuredJobOptions } from "./queue/job-options.js";
import type { EventJobData } from "./queue/event-job.js";
import { activeTraceparent } from "./tracing/trace-context.js";
import type { Tracing } from "./tracing/tracing.js";
import { expectDefined } from "./expect-defined.js";

/** The deadline of each close step after the workers (queue handles, Redis, the database). */
const CLOSE_STEP_MS = 3000;

/** How long /readyz waits for the database server's `select 1` (under READY_TIMEOUT_MS). */
const DATABASE_PROBE_MS = 1000;

export interface ServiceOptions {
  config: Config;
  logger: Logger;
  /** Custom handlers, run beside the built-in sync handlers (HANDLERS_MODULE is loaded by the CLI). */
  handlers?: EventHandlers | readonly EventHandlers[];
  /** A database opened by the caller (tests, embedding apps) instead of the one the config names; not closed by `stop()`. */
  database?: Database;
  /** Given when tracing is on (startTracing): spans at the edge, in handlers and upstream calls. */
  tracing?: Tracing;
}

export interface Service {
  config: Config;
  /** HTTP: the webhook edge (roles all, web) and ops routes (every role). */
  app: Hono<AppEnv>;
  /** The edge's hot path: verified events go to the ingest stream (roles all, web). */
  sink: StreamSink | undefined;
  /** The events queue (a handle in every role): retries, dead letters, replays and change events. */
  eventsQueue: Queue;
  worker: WorkerRole | undefined;
  mirror: MirrorStore;
  eventLog: EventLog;
  metrics: Metrics;
  /** Migrates the database, starts the workers (roles all, worker) and HTTP; resolves with the base URL. */
  start(): Promise<string>;
  /** Graceful stop: stop accepting, finish in-flight requests and jobs, close Redis and the database. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Builds the whole service from an injected config: no globals, so tests and library users can
 * run several isolated instances in one process. Redis carries the queues; PostgreSQL (a server,
 * or embedded) the mirror and the event log.
 */
export async function createService({ config, logger, handlers = [], database, tracing }: ServiceOptions): Promise<Service> {
  const connections: RedisClient[] = [];
  const connect = (kind: ConnectionKind) => {
    const connection = createRedisConnection(config.redisUrl, kind, { cluster: config.redisCluster });
    logRedisOutages(connection, { logger, url: config.redisUrl, kind });
    connections.push(connection);
    return connection;
  };
  const prefix = config.queuePrefix;
  const metrics = createMetrics();
  const storage: Storage = await openStorage(config.database, {
    logger,
    database,
    onRejected: createRejectionReporter({ logger, counter: metrics.mirrorRejected }),
  });
  const { mirror, eventLog } = storage;
  const workerConnection = config.role !== "web" ? connect("worker") : undefined;
  const webConnection = config.role !== "worker" ? connect("web") : undefined;
  const anyConnection = expectDefined(workerConnection ?? webConnection, "every role opens a Redis connection");

  const worker = workerConnection
    ? createWorkerRole({
        config,
        logger,
        connection: workerConnection,
        mirror,
        eventLog,
        changeOutbox: storage.changeOutbox,
        steps: storage.steps,
        checkpoints: storage.checkpoints,
        handlers: ([] as EventHandlers[]).concat(handlers),
        metrics,
        tracing,
        // A CLI hands the actions that need the embedded event log to this process (only it may open it).
        moreSyncProcessors: { [OPERATOR_ACTION_JOB]: (job) => runOperatorActionJob(operatorActions, job) },
      })
    : undefined;
  const sink = webConnection
    ? createStreamSink({
        connection: webConnection,
        prefix,
        dedupWindowSeconds: config.dedupWindowSeconds,
        timeoutMs: config.enqueueTimeoutMs,
        maxBacklog: config.ingest.maxBacklog,
        ...(tracing ? { traceparent: activeTraceparent } : {}),
      })
    : undefined;

  // The dashboard and the depth gauges show both queues whatever this process runs.
  const ownQueues: Queue[] = [];
  const queueHandle = (name: string, existing: Queue | undefined) => {
    if (existing) return existing;
    const q = new Queue(name, { connection: anyConnection, prefix });
    // A read-only handle (dashboard, depth gauges): its connection's errors are logged above.
    q.on("error", () => undefined);
    ownQueues.push(q);
    return q;
  };
  const eventsQueue = queueHandle(EVENTS_QUEUE, worker?.eventsQueue);
  const queues = [eventsQueue, queueHandle(SYNC_QUEUE, worker?.syncQueue)];
  collectQueueDepths(metrics, queues);
  if (worker) trackBulkReplays(worker.eventWorker, anyConnection, prefix);
  // The operator's write API: replays, reconcile, backfill (one home for the CLI and HTTP).
  const operatorActions = createOperatorActions({
    eventLog,
    eventsQueue: eventsQueue as Queue<EventJobData>,
    syncQueue: expectDefined(queues[1], "the sync queue handle"),
    syncJobOptions: { ...configuredJobOptions(config), removeOnComplete: true },
    redis: anyConnection,
    prefix,
    ...(worker ? { handlerKeys: (type: string) => worker.handlerKeys(type) } : {}),
    steps: storage.steps,
    confirmAbove: config.bulkReplayConfirmAbove,
    syncAvailable: config.api !== undefined,
    // "Refresh now" on a record page notes its id where the built-in handlers note events' ids.
    refresh: createRefreshScheduler({
      redis: anyConnection,
      queue: expectDefined(queues[1], "the sync queue handle") as Queue<RefreshJobData>,
      prefix,
      debounceMs: config.worker.syncDebounceMs,
    }),
    logger,
  });
  collectIngestBacklog(metrics, () => readStreamBacklog(anyConnection, prefix));
  collectMirrorLag(metrics, MIRROR_KINDS, (kind) => mirror.lastWriteAt(kind as MirrorKind));
  collectDatabaseHealth(metrics, () => storage.ping());
  if (worker) collectStreamConsumer(metrics, worker.streamConsumer);
  // The console's charts: each worker process adds its minute to the shared samples.
  const samplesKey = redisKeys(prefix).minuteSamples;
  const sampler = workerConnection && createMinuteSampler({ redis: workerConnection, key: samplesKey, metrics, logger });

  // The edge depends on Redis only; a worker also needs the database to record and write.
  const redisReady = async () => {
    if (sink) return sink.ping();
    // The worker connection queues commands while Redis is away and never gives up on them: ask
    // it only when connected, so a probe never adds to that queue (/readyz also bounds the wait).
    if (anyConnection.status !== "ready") throw new Error(`Redis connection is ${anyConnection.status}`);
    await anyConnection.ping();
  };
  const { adminToken } = config;
  const databaseReady = async () => {
    if (worker?.recordingFails())
      throw new NotReadyError("the event log cannot record: events wait in the queue and are handled once the database is back");
    // The embedded store is in-process: its one connection may be busy (a long operator query), which
    // is not down; what it cannot write shows in the recording above.
    if (storage.database.driver === "embedded") return;
    await withTimeout(storage.ping(), DATABASE_PROBE_MS, "database probe").catch(() => {
      throw new NotReadyError("the database does not answer: events wait in the queue and are handled once it is back");
    });
  };
  metrics.role.set({ role: config.role }, 1);
  const app = createApp({
    logger,
    onServerError: (status) => metrics.httpServerErrors.inc({ status: String(status) }),
    ...(tracing ? { tracer: tracing.tracer } : {}),
    // Every role that runs a worker needs the database to record what it handles.
    ready: worker ? () => Promise.all([redisReady(), databaseReady()]).then(() => undefined) : redisReady,
    ...(sink
      ? {
          webhooks: {
            sink,
            signingSecrets: config.signingSecrets,
            maxBodyBytes: config.maxBodyBytes,
            maxBufferedBodyBytes: config.http.maxBufferedBodyBytes,
            observer: webhookMetrics(metrics),
          },
        }
      : {}),
    // Operator routes exist only with an ADMIN_TOKEN: nothing is exposed by default.
    ...(!adminToken ? { mount: mountOperatorOff } : {}),
    ...(adminToken
      ? {
          mount: (root: Hono<AppEnv>) => {
            const mirrorReader: MirrorReader = {
              kinds: MIRROR_KINDS,
              get: (k, id) => storage.operatorMirror.get(k as MirrorKind, validateRecordId(id)),
              list: (k, q) => storage.operatorMirror.list(k as MirrorKind, filterFromQuery(q)),
            };
            const records = createRecordReader(storage, operatorActions);
            mountOperatorRoutes(root, {
              adminToken,
              mirror: mirrorReader,
              events: { get: (id) => readEventDetail(storage, id), query: (q) => eventLog.query(eventQueryFromParams(q)) },
              metrics: () => metrics.render(),
              queues,
              actions: { port: operatorActions, logger },
              records,
            });
            const sources = createConsoleSources({
              storage,
              mirror: mirrorReader,
              metrics,
              rateMax: config.api?.rate,
              records,
              // Redis away: the charts say "no samples yet" rather than hold the page.
              samples: (now) =>
                withTimeout(readMinuteSamples(anyConnection, samplesKey, { now: now.getTime() }), 1000, "minute samples").catch(() => []),
              healthLimits: { maxBacklog: config.ingest.maxBacklog, reconcileIntervalSeconds: config.worker.reconcileIntervalMs / 1000 },
            });
            mountConsole(root, { adminToken, sources, logger });
          },
        }
      : {}),
  });

  let server: RunningServer | undefined;
  let stopping: Promise<void> | undefined;

  return {
    config,
    app,
    sink,
    eventsQueue,
    worker,
    mirror,
    eventLog,
    metrics,
    async start() {
      try {
        const applied = await storage.migrate();
        if (applied.length > 0) logger.info({ migrations: applied }, "database migrated");
      } catch (err) {
        // The edge needs Redis only: a web process keeps accepting webhooks while the database is away.
        if (config.role !== "web") throw err;
        logger.error(
          { err: (err as Error).message },
          "database migration failed; the operator's mirror and event routes fail until it is reachable",
        );
      }
      // Readiness follows Redis; give the first connection a moment so /readyz is true at once
      // when Redis is there, but never wait on a Redis that is down (the edge answers 503 then).
      await Promise.race([Promise.all(connections.map(untilReady)), new Promise((r) => setTimeout(r, 2000).unref())]);
      await worker?.start();
      sampler?.start();
      server = await listen(app, config.host, config.port, config.http);
      logger.info({ url: server.url, role: config.role }, "listening");
      if (!adminToken)
        logger.warn(
          "ADMIN_TOKEN is not set: the console (/console), the operator API (/events, /mirror, /metrics) and the dashboard (/admin/queues) are off; set ADMIN_TOKEN (16+ characters) to turn them on",
        );
      return server.url;
    },
    stop() {
      // Every step has a deadline: with Redis or the database gone, a close would otherwise wait
      // for a reconnect that never comes (ioredis queues QUIT; BullMQ's close has no deadline).
      const bounded = (what: string, work: Promise<unknown>, ms = CLOSE_STEP_MS) =>
        withTimeout(work, ms, what).then(
          () => undefined,
          (err: unknown) => logger.warn({ err: (err as Error).message }, `${what}: going on with the shutdown`),
        );
      stopping ??= (async () => {
        await server?.close(config.shutdownTimeoutMs);
        if (worker) await bounded("stopping the worker", worker.stop(config.shutdownTimeoutMs), config.shutdownTimeoutMs + CLOSE_STEP_MS);
        if (sampler) await bounded("stopping the minute sampler", sampler.stop());
        await bounded("closing the queue handles", Promise.all(ownQueues.map((q) => q.close())));
        // QUIT waits for a connection that is down: only a ready one is asked to quit.
        await Promise.all(
          connections.map(async (c) => {
            if (c.status === "ready") await bounded("closing Redis", c.quit());
            c.disconnect();
          }),
        );
        await bounded("closing the database", storage.close());
      })();
      return stopping;
    },
  };
}

function untilReady(connection: RedisClient): Promise<void> {
  if (connection.status === "ready") return Promise.resolve();
  return new Promise((resolve) => connection.once("ready", () => resolve()));
}
