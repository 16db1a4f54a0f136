import { Queue } from "bullmq";
import type { Hono } from "hono";
import type { Logger } from "pino";
import type { Config } from "./config/config.js";
import { isKnownEventType } from "./events/catalog.js";
import { requireAdminToken } from "./http/admin-auth.js";
import { createApp } from "./http/app.js";
import { denyFraming } from "./http/deny-framing.js";
import { requireSameOrigin } from "./http/same-origin.js";
import type { AppEnv } from "./http/context.js";
import { DASHBOARD_PATH, dashboardRoutes } from "./http/dashboard.js";
import { listen, type RunningServer } from "./http/listen.js";
import { mirrorRoutes } from "./http/mirror-routes.js";
import type { WebhookObserver } from "./http/webhook-route.js";
import { createMetrics, type Metrics } from "./metrics/metrics.js";
import { createRedisMirror } from "./mirror/redis-store.js";
import { MIRROR_KINDS, type MirrorKind, type MirrorStore } from "./mirror/store.js";
import { createRedisConnection, type ConnectionKind, type RedisClient } from "./redis/connection.js";
import { createEventProducer, type EventProducer } from "./queue/event-producer.js";
import { retentionJobOptions, retryJobOptions } from "./queue/job-options.js";
import { createWorkerRole, type WorkerRole } from "./worker/worker-role.js";
import type { EventHandlers } from "./worker/handler-context.js";
import { EVENTS_QUEUE, SYNC_QUEUE } from "./queue/names.js";

export interface ServiceOptions {
  config: Config;
  logger: Logger;
  /** Custom handlers, run beside the built-in sync handlers (HANDLERS_MODULE is loaded by the CLI). */
  handlers?: EventHandlers | readonly EventHandlers[];
}

export interface Service {
  config: Config;
  /** HTTP: the webhook edge (roles all, web) and ops routes (every role). */
  app: Hono<AppEnv>;
  producer: EventProducer | undefined;
  worker: WorkerRole | undefined;
  mirror: MirrorStore;
  metrics: Metrics;
  /** Starts the workers (roles all, worker) and HTTP; resolves with the base URL. */
  start(): Promise<string>;
  /** Graceful stop: stop accepting, finish in-flight requests and jobs, close Redis. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Builds the whole service from an injected config: no globals, so tests and library users can
 * run several isolated instances in one process.
 */
export function createService({ config, logger, handlers = [] }: ServiceOptions): Service {
  const connections: RedisClient[] = [];
  const connect = (kind: ConnectionKind) => {
    const connection = createRedisConnection(config.redisUrl, kind, { cluster: config.redisCluster });
    connection.on("error", (err) => logger.warn({ err: err.message, kind }, "redis connection error"));
    connections.push(connection);
    return connection;
  };
  const prefix = config.queuePrefix;
  const metrics = createMetrics();
  const workerConnection = config.role !== "web" ? connect("worker") : undefined;
  const webConnection = config.role !== "worker" ? connect("web") : undefined;
  const anyConnection = (workerConnection ?? webConnection)!;
  const mirror = createRedisMirror(anyConnection, prefix);

  const worker = workerConnection
    ? createWorkerRole({ config, logger, connection: workerConnection, mirror, handlers: ([] as EventHandlers[]).concat(handlers), metrics })
    : undefined;

  const producer = webConnection
    ? createEventProducer({
        connection: webConnection,
        prefix,
        dedupWindowSeconds: config.dedupWindowSeconds,
        timeoutMs: config.enqueueTimeoutMs,
        jobOptions: { ...retryJobOptions(config.worker.attempts, config.worker.backoffMs), ...retentionJobOptions(config.retention) },
        onError: (err) => logger.warn({ err: err.message }, "queue error"),
      })
    : undefined;

  // The dashboard and the depth gauges show both queues whatever this process runs.
  const ownQueues: Queue[] = [];
  const queueHandle = (name: string, existing: Queue | undefined) => {
    if (existing) return existing;
    const q = new Queue(name, { connection: anyConnection, prefix });
    q.on("error", () => {});
    ownQueues.push(q);
    return q;
  };
  const queues = [queueHandle(EVENTS_QUEUE, producer?.queue), queueHandle(SYNC_QUEUE, worker?.syncQueue)];
  metrics.addCollector(async () => {
    for (const q of queues) {
      const counts = await q.getJobCounts("waiting", "active", "delayed", "failed", "completed", "prioritized");
      for (const [state, n] of Object.entries(counts)) metrics.queueDepth.set({ queue: q.name, state }, n);
    }
  });
  metrics.addCollector(async () => {
    const now = Date.now();
    for (const kind of MIRROR_KINDS) {
      const at = await mirror.lastWriteAt(kind);
      if (at !== undefined) metrics.mirrorLag.set({ kind }, (now - at) / 1000);
    }
  });

  const observer: WebhookObserver = {
    accepted({ type, secretIndex, duplicate, enqueueMs }) {
      const label = isKnownEventType(type) ? type : "other";
      metrics.eventsReceived.inc({ type: label, secret: String(secretIndex) });
      if (duplicate) metrics.eventsDeduplicated.inc({ type: label });
      metrics.enqueueSeconds.observe(enqueueMs / 1000);
    },
    rejected: (reason) => metrics.eventsRejected.inc({ reason }),
  };
  // The worker connection queues commands while Redis is away and never gives up on them: ask it
  // only when it is connected, so a readiness probe never adds to that queue (/readyz also bounds it).
  const ping = async () => {
    if (producer) return producer.ping();
    if (anyConnection.status !== "ready") throw new Error(`Redis connection is ${anyConnection.status}`);
    await anyConnection.ping();
  };
  const adminToken = config.adminToken;
  const app = createApp({
    logger,
    ready: ping,
    ...(producer
      ? { webhooks: { sink: producer, signingSecrets: config.signingSecrets, maxBodyBytes: config.maxBodyBytes, maxBufferedBodyBytes: config.http.maxBufferedBodyBytes, observer } }
      : {}),
    mount: (root) => {
      // Operator routes exist only with an ADMIN_TOKEN: nothing is exposed by default.
      if (!adminToken) return;
      // Framing denied on every operator answer; the token first (401 tells nothing more), then
      // the cross-site check, so a page the operator visits cannot act with their credentials.
      const guard = [denyFraming(), requireAdminToken(adminToken), requireSameOrigin()] as const;
      root.use("/mirror/*", ...guard);
      root.route("/mirror", mirrorRoutes({ kinds: MIRROR_KINDS, get: (k, id) => mirror.get(k as MirrorKind, id), list: (k, r) => mirror.list(k as MirrorKind, r) }));
      root.use("/metrics", ...guard);
      root.get("/metrics", async (c) => {
        const { contentType, body } = await metrics.render();
        return c.body(body, 200, { "Content-Type": contentType });
      });
      root.use(`${DASHBOARD_PATH}/*`, ...guard);
      root.use(DASHBOARD_PATH, ...guard);
      root.route(DASHBOARD_PATH, dashboardRoutes(queues));
    },
  });

  let server: RunningServer | undefined;
  let stopping: Promise<void> | undefined;

  return {
    config,
    app,
    producer,
    worker,
    mirror,
    metrics,
    async start() {
      // Readiness follows Redis; give the first connection a moment so /readyz is true at once
      // when Redis is there, but never wait on a Redis that is down (the edge answers 503 then).
      await Promise.race([Promise.all(connections.map(untilReady)), new Promise((r) => setTimeout(r, 2000).unref())]);
      await worker?.start();
      server = await listen(app, config.host, config.port, config.http);
      logger.info({ url: server.url, role: config.role }, "listening");
      return server.url;
    },
    stop() {
      stopping ??= (async () => {
        await server?.close(config.shutdownTimeoutMs);
        await producer?.close();
        await worker?.stop(config.shutdownTimeoutMs);
        await Promise.all(ownQueues.map((q) => q.close()));
        await Promise.all(connections.map((c) => c.quit().catch(() => c.disconnect())));
      })();
      return stopping;
    },
  };
}

function untilReady(connection: RedisClient): Promise<void> {
  if (connection.status === "ready") return Promise.resolve();
  return new Promise((resolve) => connection.once("ready", () => resolve()));
}
