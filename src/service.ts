import type { Queue } from "bullmq";
import type { Hono } from "hono";
import type { Logger } from "pino";
import type { Config } from "./config/config.js";
import type { AppEnv } from "./http/request-log.js";
import { listen, type RunningServer, createApp } from "./http/app.js";
import {
  createMetrics,
  type Metrics,
  collectDatabaseHealth,
  collectIngestBacklog,
  collectMirrorLag,
  collectQueueDepths,
  collectStreamConsumer,
} from "./metrics/metrics.js";
import type { EventLog } from "./mirror/event-log.js";
import { createRejectionReporter } from "./mirror/set-aside-records.js";
import { openStorage, type Storage } from "./mirror/storage.js";
import type { MirrorStore } from "./mirror/mirror-store.js";
import { type Database } from "./mirror/database.js";
import { MIRROR_KINDS, type MirrorKind } from "./mirror/kinds.js";
import { createStreamSink, readStreamBacklog, type EventSink as StreamSink } from "./queue/ingest-stream.js";
import { type Deadline, withTimeout, deadlineIn } from "./base/deadline.js";
import { operatorMount, serviceAccounts, serviceOperatorActions, type OperatorQueues } from "./service/operator-mount.js";
import { type Tracing, activeTraceparent } from "./tracing/tracing.js";
import type { EventHandlers } from "./worker/handlers.js";
import type { OperatorActions } from "./worker/operator-actions.js";
import { type WorkerRole, type WorkerRoleDeps, createWorkerRole } from "./worker/worker-role.js";
import { createAccountDirectory, createAccountRegistry, createSecretsBox } from "./mirror/accounts.js";
import type { AccountSecrets, WebhookObserver } from "./http/webhook-route.js";
import { isKnownEventType } from "./events/catalog.js";
import { expectDefined } from "./errors.js";
import { createRedisConnection, type ConnectionKind, type RedisClient, logRedisOutages, REDIS_WAIT_MS, redisKeys } from "./redis/redis.js";
import { createEventsQueue, createSyncQueue } from "./queue/events-queue.js";
import { NotReadyError } from "./http/errors.js";
import { mountOperatorOff } from "./http/operator-routes.js";
import { createMinuteSampler, type MinuteSampler } from "./metrics/minute-samples.js";
import { createAlerts } from "./alerts/alerts.js";
import type { AnnounceTransition } from "./problems/problem.js";
import { createProblemStore } from "./problems/problem-store.js";
import { createProblemTracker, type ProblemTracker } from "./problems/problem-tracker.js";

export interface ServiceOptions {
  config: Config;
  logger: Logger;
  /** Custom handlers, run beside the built-in sync handlers (HANDLERS_MODULE is loaded by the CLI). */
  handlers?: EventHandlers | readonly EventHandlers[];
  /** A database opened by the caller (tests, embedding apps) instead of the one the config names; not closed by `stop()`. */
  database?: Database;
  /** Given when tracing is on (startTracing): spans at the edge, in handlers and upstream calls. */
  tracing?: Tracing;
  /**
   * Announces each problem's opening and resolution instead of the alerts' durable sender
   * (alerts/alerts.ts, the default). Idempotent per transition id.
   */
  announce?: AnnounceTransition;
}

export interface Service {
  config: Config;
  /** HTTP: the webhook edge (roles all, web) and ops routes (every role). */
  app: Hono<AppEnv>;
  /** The edge's hot path: verified events go to the ingest stream (roles all, web). */
  sink: StreamSink | undefined;
  /** The events queue (a handle in every role): retries, dead letters, replays and change events. */
  eventsQueue: Queue;
  /** The worker role (roles all and worker). */
  worker: WorkerRole | undefined;
  mirror: MirrorStore;
  eventLog: EventLog;
  metrics: Metrics;
  /**
   * Announces a problem's opening or resolving (alerts/alerts.ts): queued durably for the
   * deployment's ALERT_WEBHOOK_URL and the account's own alertUrl. The problem store is given it.
   */
  announce: AnnounceTransition;
  /** Opens and resolves the problems from the facts this process meets (problems/problem-tracker.ts). */
  problems: ProblemTracker;
  /** Migrates the database, starts the workers (roles all, worker) and HTTP; resolves with the base URL. */
  start(): Promise<string>;
  /**
   * Graceful stop: stop accepting, finish in-flight requests and jobs, close Redis and the
   * database, by `deadline` (SHUTDOWN_TIMEOUT_MS from the call unless given) and the close grace
   * after it (stopService). Idempotent: a second call answers the first's stop.
   */
  stop(deadline?: Deadline): Promise<void>;
}

/**
 * Builds the whole service from an injected config: no globals, so tests and library users can
 * run several isolated instances in one process. Redis carries the queues; PostgreSQL (a server,
 * or embedded) the mirror and the event log. Built in steps: the stores, the roles (worker, edge),
 * the queue handles, the operator actions, the metrics, the HTTP app; stopped in steps too.
 */
export async function createService({ config, logger, handlers = [], database, tracing, announce }: ServiceOptions): Promise<Service> {
  const metrics = createMetrics();
  const storage = await openStorage(config.database, {
    logger,
    database,
    onRejected: createRejectionReporter({ logger, counter: metrics.mirrorRejected }),
  });
  const connections = openRedisConnections(config, logger);
  const connection = connections.any;
  const { alerts, problems } = serviceProblems(
    { config, logger, storage, connection, announce },
    (account) => directory.get(account)?.alertUrl,
  );
  const parts: ServiceParts = { config, logger, metrics, storage, connections, problems };
  // The registered companies (mirror/accounts.ts): the edge serves each at /webhooks/{id} from memory.
  const accounts = createAccountRegistry(storage.database.db, config.secretsKey ? createSecretsBox(config.secretsKey) : undefined);
  // The edge verifies each account's deliveries with it, the worker calls each account's API with it.
  // A new account's first import starts as soon as a worker sees it (not at the next tick).
  const directory = createAccountDirectory(accounts, { logger, onChange: (change) => worker?.accountsChanged(change) });
  const accountsPort = serviceAccounts({ config, storage, connection, registry: accounts, directory, logger, problems });
  const { worker, sink } = createServiceRoles({
    ...parts,
    alerts,
    handlers: ([] as EventHandlers[]).concat(handlers),
    tracing,
    forAccount: (account) => storage.forAccount(account),
    accounts: async () => (await accounts.list()).map((a) => a.id),
    keysOf: (account) => directory.get(account),
  });
  const queues = queueHandles(parts, worker);
  const operatorActions: OperatorActions = serviceOperatorActions({ config, logger, connection, storage, queues, worker, accounts });
  const sampler = collectServiceMetrics({ ...parts, queues, worker });
  const { adminToken } = config;
  const app = createServiceApp({
    ...parts,
    tracing,
    sink,
    accounts: directory,
    ready: serviceReadiness({ sink, worker, connection, storage }),
    operator: adminToken
      ? operatorMount({
          adminToken,
          config,
          logger,
          metrics,
          storage,
          queues,
          actions: operatorActions,
          connection,
          accounts: accountsPort,
          problems,
        })
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
    announce: alerts.announce,
    problems,
    async start() {
      try {
        const applied = await storage.migrate();
        if (applied.length > 0) logger.info({ migrations: applied }, "database migrated");
      } catch (err) {
        // The edge needs Redis only: a web process keeps accepting webhooks while the database is away.
        if (config.role !== "web") throw err;
        logger.error(
          { err: (err as Error).message },
          `${(err as Error).message}; the operator's mirror and event routes fail until it is reachable`,
        );
      }
      // Readiness follows Redis; give the first connection a moment so /readyz is true at once
      // when Redis is there, but never wait on a Redis that is down (the edge answers 503 then).
      await Promise.race([Promise.all(connections.all.map(untilReady)), new Promise((r) => setTimeout(r, REDIS_WAIT_MS).unref())]);
      await directory.start();
      // Before the worker: what is open already stays open (nothing opens twice after a restart).
      await problems.start().catch((err: unknown) => {
        // The database away (a web process goes on): the view starts empty and follows at the next read.
        if (config.role !== "web") throw err;
        logger.error({ err: (err as Error).message }, "the open problems could not be read: they are read again in a few seconds");
      });
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
      directory.close();
      stopping ??= stopService({ ...parts, server, worker, sampler, ownQueues: [...queues.own, alerts.queue] }, deadline);
      return stopping;
    },
  };
}

/** What every step of the build and of the stop reads: the config, the logger, the metrics, the stores and the Redis connections. */
/**
 * The problems and their notifications. Notifications are queued from every role and sent by the
 * worker role; an account's own URL is read from the directory as each is sent (a rotation takes
 * effect for retries too). One view of the problems per process, over the one table every process
 * shares; the workers announce again what was left unannounced (a failed hand-over, a process
 * stopped first).
 */
function serviceProblems(
  deps: Pick<ServiceParts, "config" | "logger" | "storage"> & { connection: RedisClient; announce: AnnounceTransition | undefined },
  alertUrlOf: (account: string) => string | undefined,
) {
  const { config, logger, storage, connection } = deps;
  const alerts = createAlerts({
    connection,
    prefix: config.queuePrefix,
    settings: config.alerts,
    alertUrlOf,
    logger,
    enqueueTimeoutMs: config.enqueueTimeoutMs,
  });
  const problems = createProblemTracker({
    store: createProblemStore(storage.database.db),
    logger,
    announce: deps.announce ?? alerts.announce,
    reannounceMs: config.role === "web" ? 0 : REANNOUNCE_MS,
  });
  return { alerts, problems };
}

interface ServiceParts {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  storage: Storage;
  connections: RedisConnections;
  problems: ProblemTracker;
}

/** How often a worker announces again the transitions left unannounced. */
const REANNOUNCE_MS = 30_000;

/** The worker and the edge's sink, each where the role runs it. */
function createServiceRoles(
  deps: ServiceParts & {
    handlers: readonly EventHandlers[];
    tracing: Tracing | undefined;
    forAccount: WorkerRoleDeps["forAccount"];
    accounts: WorkerRoleDeps["accounts"];
    keysOf: WorkerRoleDeps["keysOf"];
    alerts: WorkerRoleDeps["alerts"];
  },
): Pick<Service, "worker" | "sink"> {
  const { config, connections, storage, tracing } = deps;
  const worker =
    connections.worker &&
    createWorkerRole({
      config,
      logger: deps.logger,
      connection: connections.worker,
      mirror: storage.mirror,
      eventLog: storage.eventLog,
      changeOutbox: storage.changeOutbox,
      steps: storage.steps,
      checkpoints: storage.checkpoints,
      handlers: deps.handlers,
      metrics: deps.metrics,
      tracing,
      forAccount: deps.forAccount,
      accounts: deps.accounts,
      keysOf: deps.keysOf,
      alerts: deps.alerts,
      problems: deps.problems,
    });
  const sink =
    connections.web &&
    createStreamSink({
      connection: connections.web,
      prefix: config.queuePrefix,
      dedupWindowSeconds: config.dedupWindowSeconds,
      timeoutMs: config.enqueueTimeoutMs,
      maxBacklog: config.ingest.maxBacklog,
      ...(tracing ? { traceparent: activeTraceparent } : {}),
    });
  return { worker, sink };
}

interface RedisConnections {
  /** Roles all and worker: for BullMQ's workers and the stream consumer (never gives up on a command). */
  worker: RedisClient | undefined;
  /** Roles all and web: the edge's, which fails fast while Redis is away. */
  web: RedisClient | undefined;
  /** The worker's, else the edge's: for what every role does (queue handles, operator actions, probes). */
  any: RedisClient;
  /** Every connection opened, in the order opened. */
  all: readonly RedisClient[];
}

/** The connections the role needs, each with its outages logged as a few lines (logRedisOutages). */
function openRedisConnections(config: Config, logger: Logger): RedisConnections {
  const all: RedisClient[] = [];
  const connect = (kind: ConnectionKind) => {
    const connection = createRedisConnection(config.redisUrl, kind, { cluster: config.redisCluster });
    logRedisOutages(connection, { logger, url: config.redisUrl, kind });
    all.push(connection);
    return connection;
  };
  const worker = config.role !== "web" ? connect("worker") : undefined;
  const web = config.role !== "worker" ? connect("web") : undefined;
  return { worker, web, any: expectDefined(worker ?? web, "every role opens a Redis connection"), all };
}

/** Resolves once `connection` is ready (at once when it is). */
function untilReady(connection: RedisClient): Promise<void> {
  if (connection.status === "ready") return Promise.resolve();
  return new Promise((resolve) => connection.once("ready", () => resolve()));
}

interface QueueHandles extends OperatorQueues {
  /** The handles opened here (a process without a worker): the service closes them at its stop. */
  own: readonly Queue[];
}

/**
 * Both queues in every role (the dashboard, the depth gauges and the operator actions use them):
 * the worker's own where this process runs one, else handles of their own.
 */
function queueHandles({ config, logger, connections }: ServiceParts, worker: WorkerRole | undefined): QueueHandles {
  if (worker) return { eventsQueue: worker.eventsQueue, syncQueue: worker.syncQueue, own: [] };
  const options = { connection: connections.any, config, logger };
  const eventsQueue = createEventsQueue(options);
  const syncQueue = createSyncQueue(options);
  return { eventsQueue, syncQueue, own: [eventsQueue, syncQueue] };
}

/** How long /readyz waits for the database server's `select 1` (under REDIS_WAIT_MS, /readyz's whole wait). */
const DATABASE_PROBE_MS = 1000;

/**
 * What /readyz checks. The edge depends on Redis only; every role that runs a worker also needs
 * the database, to record what it handles.
 */
function serviceReadiness(deps: {
  sink: StreamSink | undefined;
  worker: WorkerRole | undefined;
  connection: RedisClient;
  storage: Storage;
}): () => Promise<void> {
  const { sink, worker, connection, storage } = deps;
  const redisReady = async () => {
    if (sink) return sink.ping();
    // The worker connection queues commands while Redis is away and never gives up on them: ask
    // it only when connected, so a probe never adds to that queue (/readyz also bounds the wait).
    if (connection.status !== "ready") throw new Error(`Redis connection is ${connection.status}`);
    await connection.ping();
  };
  if (!worker) return redisReady;
  const databaseReady = async () => {
    if (worker.recordingFails())
      throw new NotReadyError("the event log cannot record: events wait in the queue and are handled once the database is back");
    await withTimeout(storage.ping(), DATABASE_PROBE_MS, "database probe").catch(() => {
      throw new NotReadyError("the database does not answer: events wait in the queue and are handled once it is back");
    });
  };
  return () => Promise.all([redisReady(), databaseReady()]).then(() => undefined);
}

/**
 * The service's HTTP app: health and readiness always, the webhook edge where the role has a
 * sink, and the operator's routes (`operator`) only with an ADMIN_TOKEN: nothing is exposed by default.
 */
function createServiceApp(
  deps: ServiceParts & {
    tracing: Tracing | undefined;
    sink: StreamSink | undefined;
    accounts: AccountSecrets | undefined;
    ready: () => Promise<void>;
    /** Mounts the operator's routes; undefined without an ADMIN_TOKEN. */
    operator: ((root: Hono<AppEnv>) => void) | undefined;
  },
): Hono<AppEnv> {
  const { config, metrics, tracing, sink } = deps;
  return createApp({
    logger: deps.logger,
    onServerError: (status) => metrics.httpServerErrors.inc({ status: String(status) }),
    ...(tracing ? { tracer: tracing.tracer } : {}),
    ready: deps.ready,
    ...(sink
      ? {
          webhooks: {
            sink,
            signingSecrets: config.signingSecrets,
            signatureScheme: config.signatureScheme,
            signatureToleranceSeconds: config.signatureToleranceSeconds,
            ...(deps.accounts ? { accounts: deps.accounts } : {}),
            maxBodyBytes: config.maxBodyBytes,
            bodyBudget: {
              maxBytes: config.http.maxBufferedBodyBytes,
              sourceShare: config.http.bodySourceShare,
              readTimeoutMs: config.http.bodyTimeoutMs,
            },
            observer: webhookMetrics(metrics),
          },
        }
      : {}),
    mount: deps.operator ?? mountOperatorOff,
  });
}

/**
 * What the service reports at scrape time (queue depths, the ingest backlog, mirror lag, the
 * database, the stream consumer, the role); returns the minute sampler a worker process runs for
 * the console's charts (each worker adds its minute to the shared samples).
 */
function collectServiceMetrics(deps: ServiceParts & { queues: QueueHandles; worker: WorkerRole | undefined }): MinuteSampler | undefined {
  const { config, metrics, storage, worker } = deps;
  const { any, worker: workerConnection } = deps.connections;
  const prefix = config.queuePrefix;
  collectQueueDepths(metrics, [deps.queues.eventsQueue, deps.queues.syncQueue]);
  collectIngestBacklog(metrics, () => readStreamBacklog(any, prefix));
  collectMirrorLag(metrics, MIRROR_KINDS, (kind) => storage.mirror.lastWriteAt(kind as MirrorKind));
  collectDatabaseHealth(metrics, () => storage.ping());
  if (worker) collectStreamConsumer(metrics, worker.streamConsumer);
  metrics.role.set({ role: config.role }, 1);
  return (
    workerConnection && createMinuteSampler({ redis: workerConnection, key: redisKeys(prefix).minuteSamples, metrics, logger: deps.logger })
  );
}

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
interface StoppingService extends ServiceParts {
  server: RunningServer | undefined;
  worker: WorkerRole | undefined;
  sampler: MinuteSampler | undefined;
  /** Queue handles the service opened itself (the worker closes its own). */
  ownQueues: readonly Queue[];
}

/**
 * Stops accepting, finishes in-flight requests and jobs, closes Redis and the database, all by one
 * deadline (`drain`: SHUTDOWN_TIMEOUT_MS from the signal unless given) and what is left of the
 * close grace after it. With Redis or the database gone, a close would otherwise wait for a
 * reconnect that never comes (ioredis queues QUIT; BullMQ's close has no deadline).
 */
async function stopService(s: StoppingService, drain: Deadline = deadlineIn(s.config.shutdownTimeoutMs)): Promise<void> {
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
  await bounded("writing the problems' counts", s.problems.stop());
  await bounded("closing the queue handles", Promise.all(s.ownQueues.map((q) => q.close())));
  // QUIT waits for a connection that is down: only a ready one is asked to quit.
  await Promise.all(
    s.connections.all.map(async (c) => {
      if (c.status === "ready") await bounded("closing Redis", c.quit());
      c.disconnect();
    }),
  );
  await bounded("closing the database", s.storage.close());
}

/** The edge's observer that counts accepted, deduplicated and refused deliveries (here, where the edge and the metrics meet: neither imports the other). */
function webhookMetrics(metrics: Metrics): WebhookObserver {
  return {
    accepted({ type, secretIndex, duplicate, enqueueMs }) {
      // Event types are chosen by senders: keep the label set bounded.
      const label = isKnownEventType(type) ? type : "other";
      metrics.eventsReceived.inc({ type: label, secret: String(secretIndex) });
      if (duplicate) metrics.eventsDeduplicated.inc({ type: label });
      metrics.enqueueSeconds.observe(enqueueMs / 1000);
    },
    rejected: (reason) => metrics.eventsRejected.inc({ reason }),
  };
}
