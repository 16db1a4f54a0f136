import type { Queue } from "bullmq";
import type { Hono } from "hono";
import type { Logger } from "pino";
import type { Config } from "./config/config.js";
import type { AppEnv } from "./http/request-log.js";
import { listen, type RunningServer } from "./http/app.js";
import { createMetrics, type Metrics } from "./metrics/metrics.js";
import type { Database } from "./mirror/database.js";
import type { EventLog } from "./mirror/event-log.js";
import { createRejectionReporter } from "./mirror/rejection-reporter.js";
import { openStorage } from "./mirror/storage.js";
import type { MirrorStore } from "./mirror/store.js";
import type { StreamSink } from "./queue/stream-sink.js";
import type { Deadline } from "./queue/with-timeout.js";
import { operatorMount } from "./service/operator-mount.js";
import { queueHandles } from "./service/queue-handles.js";
import { serviceReadiness } from "./service/readiness.js";
import { openRedisConnections, untilReady } from "./service/redis-connections.js";
import { createServiceApp } from "./service/service-app.js";
import { collectServiceMetrics } from "./service/service-metrics.js";
import { serviceOperatorActions } from "./service/service-operator-actions.js";
import { createServiceRoles } from "./service/service-roles.js";
import { stopService } from "./service/service-stop.js";
import type { Tracing } from "./tracing/tracing.js";
import type { EventHandlers } from "./worker/handlers.js";
import { OPERATOR_ACTION_JOB, runOperatorActionJob } from "./worker/operator-actions.js";
import type { OperatorActions } from "./worker/operator-actions.js";
import type { WorkerRole } from "./worker/worker-role.js";

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
  /**
   * Graceful stop: stop accepting, finish in-flight requests and jobs, close Redis and the
   * database, by `deadline` (SHUTDOWN_TIMEOUT_MS from the call unless given) and the close grace
   * after it (service-stop.ts). Idempotent: a second call answers the first's stop.
   */
  stop(deadline?: Deadline): Promise<void>;
}

/**
 * Builds the whole service from an injected config: no globals, so tests and library users can
 * run several isolated instances in one process. Redis carries the queues; PostgreSQL (a server,
 * or embedded) the mirror and the event log. Built in steps: the stores, the roles (worker, edge),
 * the queue handles, the operator actions, the metrics, the HTTP app; stopped in steps too.
 */
export async function createService({ config, logger, handlers = [], database, tracing }: ServiceOptions): Promise<Service> {
  const metrics = createMetrics();
  const storage = await openStorage(config.database, {
    logger,
    database,
    onRejected: createRejectionReporter({ logger, counter: metrics.mirrorRejected }),
  });
  const connections = openRedisConnections(config, logger);
  const connection = connections.any;
  const { worker, sink } = createServiceRoles({
    config,
    logger,
    connections,
    storage,
    metrics,
    handlers: ([] as EventHandlers[]).concat(handlers),
    tracing,
    // A CLI hands the actions that need the embedded event log to this process (only it may open it).
    moreSyncProcessors: { [OPERATOR_ACTION_JOB]: (job) => runOperatorActionJob(operatorActions, job) },
  });
  const queues = queueHandles({ config, logger, connection, worker });
  const operatorActions: OperatorActions = serviceOperatorActions({ config, logger, connection, storage, queues, worker });
  const sampler = collectServiceMetrics({ config, logger, metrics, connections, storage, queues, worker });
  const { adminToken } = config;
  const app = createServiceApp({
    config,
    logger,
    metrics,
    tracing,
    sink,
    ready: serviceReadiness({ sink, worker, connection, storage }),
    operator: adminToken
      ? operatorMount({ adminToken, config, logger, metrics, storage, queues, actions: operatorActions, connection })
      : undefined,
  });

  let server: RunningServer | undefined;
  let stopping: Promise<void> | undefined;
  return {
    config,
    app,
    sink,
    eventsQueue: queues.eventsQueue,
    worker,
    mirror: storage.mirror,
    eventLog: storage.eventLog,
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
      await Promise.race([Promise.all(connections.all.map(untilReady)), new Promise((r) => setTimeout(r, 2000).unref())]);
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
    stop(deadline) {
      stopping ??= stopService(
        {
          config,
          logger,
          server,
          worker,
          sampler,
          ownQueues: queues.own,
          connections: connections.all,
          storage,
        },
        deadline,
      );
      return stopping;
    },
  };
}
