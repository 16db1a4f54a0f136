import { Queue } from "bullmq";
import type { Hono } from "hono";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import type { Config } from "./config/config.js";
import { isKnownEventType } from "./events/catalog.js";
import { requireAdminToken } from "./http/admin-auth.js";
import { createApp } from "./http/app.js";
import type { AppEnv } from "./http/context.js";
import { DASHBOARD_PATH, dashboardRoutes } from "./http/dashboard.js";
import { listen, type RunningServer } from "./http/listen.js";
import { mirrorRoutes } from "./http/mirror-routes.js";
import type { WebhookObserver } from "./http/webhook-route.js";
import { createMetrics, type Metrics } from "./metrics/metrics.js";
import { createRedisMirror } from "./mirror/redis-store.js";
import { MIRROR_KINDS, type MirrorStore } from "./mirror/store.js";
import { createRedisConnection } from "./queue/connection.js";
import { EVENTS_QUEUE } from "./queue/names.js";
import { readStreamBacklog } from "./queue/stream-backlog.js";
import { createStreamSink, type StreamSink } from "./queue/stream-sink.js";
import { createWorkerRuntime, type WorkerRuntime } from "./runtime/worker.js";
import type { EventHandlers } from "./sync/context.js";
import { SYNC_QUEUE } from "./sync/sync-worker.js";

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
  /** The edge's hot path: verified events go to the ingest stream (roles all, web). */
  sink: StreamSink | undefined;
  /** The events queue (a handle in every role), where the stream pump moves events. */
  eventsQueue: Queue;
  worker: WorkerRuntime | undefined;
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
  const connections: Redis[] = [];
  const connect = (kind: "producer" | "worker") => {
    const connection = createRedisConnection(config.redisUrl, kind);
    connection.on("error", (err) => logger.warn({ err: err.message, kind }, "redis connection error"));
    connections.push(connection);
    return connection;
  };
  const prefix = config.queuePrefix;
  const metrics = createMetrics();
  const workerConnection = config.role !== "web" ? connect("worker") : undefined;
  const edgeConnection = config.role !== "worker" ? connect("producer") : undefined;
  const anyConnection = (workerConnection ?? edgeConnection)!;
  const mirror = createRedisMirror(anyConnection, prefix);

  const worker = workerConnection
    ? createWorkerRuntime({ config, logger, connection: workerConnection, mirror, handlers: ([] as EventHandlers[]).concat(handlers), metrics })
    : undefined;

  const sink = edgeConnection
    ? createStreamSink({ connection: edgeConnection, prefix, dedupWindowSeconds: config.dedupWindowSeconds, timeoutMs: config.enqueueTimeoutMs, maxBacklog: config.ingest.maxBacklog })
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
  const queues = [queueHandle(EVENTS_QUEUE, worker?.pump.queue), queueHandle(SYNC_QUEUE, worker?.syncQueue)];
  metrics.addCollector(async () => {
    const backlog = await readStreamBacklog(anyConnection, prefix);
    metrics.streamBacklog.set(backlog.length);
    metrics.pumpLag.set(backlog.oldestAgeMs / 1000);
  });
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
  const ping = () => (sink ? sink.ping() : anyConnection.ping().then(() => undefined));
  const adminToken = config.adminToken;
  const app = createApp({
    logger,
    ready: ping,
    ...(sink
      ? { webhooks: { sink, signingSecrets: config.signingSecrets, maxBodyBytes: config.maxBodyBytes, observer } }
      : {}),
    mount: (root) => {
      // Operator routes exist only with an ADMIN_TOKEN: nothing is exposed by default.
      if (!adminToken) return;
      const guard = requireAdminToken(adminToken);
      root.use("/mirror/*", guard);
      root.route("/mirror", mirrorRoutes(mirror));
      root.use("/metrics", guard);
      root.get("/metrics", async (c) => {
        const { contentType, body } = await metrics.render();
        return c.body(body, 200, { "Content-Type": contentType });
      });
      root.use(`${DASHBOARD_PATH}/*`, guard);
      root.use(DASHBOARD_PATH, guard);
      root.route(DASHBOARD_PATH, dashboardRoutes(queues));
    },
  });

  let server: RunningServer | undefined;
  let stopping: Promise<void> | undefined;

  return {
    config,
    app,
    sink,
    eventsQueue: queues[0]!,
    worker,
    mirror,
    metrics,
    async start() {
      // Readiness follows Redis; give the first connection a moment so /readyz is true at once
      // when Redis is there, but never wait on a Redis that is down (the edge answers 503 then).
      await Promise.race([Promise.all(connections.map(untilReady)), new Promise((r) => setTimeout(r, 2000).unref())]);
      await worker?.start();
      server = await listen(app, config.host, config.port);
      logger.info({ url: server.url, role: config.role }, "listening");
      return server.url;
    },
    stop() {
      stopping ??= (async () => {
        await server?.close(config.shutdownTimeoutMs);
        await worker?.stop(config.shutdownTimeoutMs);
        await Promise.all(ownQueues.map((q) => q.close()));
        await Promise.all(connections.map((c) => c.quit().catch(() => c.disconnect())));
      })();
      return stopping;
    },
  };
}

function untilReady(connection: Redis): Promise<void> {
  if (connection.status === "ready") return Promise.resolve();
  return new Promise((resolve) => connection.once("ready", () => resolve()));
}
