import type { Tracer } from "@opentelemetry/api";
import { serve, type ServerType } from "@hono/node-server";
import type { Server, ServerResponse } from "node:http";
import { Hono, type Context } from "hono";
import type { Logger } from "pino";
import type { HttpLimits } from "../config/config.js";
import { REDIS_WAIT_MS } from "../redis/redis.js";
import { serverSpan } from "../tracing/tracing.js";
import { errorBody, NotReadyError, SERVED_BY, toHttpFailure } from "./errors.js";
import { boundedPath, quietRequest, requestLog, type AppEnv } from "./request-log.js";
import { webhookRoute, type WebhookRouteOptions } from "./webhook-route.js";

// The HTTP edge as one app: its factory, the health routes, and the server that listens and
// stops within a deadline.

export interface CreateAppOptions {
  /** The webhook receiver; absent in a worker-only process, which serves only ops routes. */
  webhooks?: WebhookRouteOptions;
  /** What /readyz checks (Redis answers). */
  ready: () => Promise<void>;
  logger: Logger;
  /** Extra routes (admin, mirror, metrics) mounted by the caller. */
  mount?: (app: Hono<AppEnv>) => void;
  /** Given only when tracing is on: each delivery gets a server span, the root of its trace. */
  tracer?: Tracer;
  /** Called with the status of every 5xx answer (for metrics). */
  onServerError?: (status: number) => void;
}

/** The HTTP edge. One factory serves production, tests and benches. */
export function createApp(options: CreateAppOptions): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  // Every answer names the service (SERVED_BY), refusals and unknown routes too. On a Node server
  // the header goes on the outgoing message, which merges it into whatever answer is written:
  // reading `c.res.headers` instead builds a Headers object per request (about 2.5 % of the edge's CPU).
  app.use(async function servedBy(c, next) {
    const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
    if (outgoing) {
      outgoing.setHeader(SERVED_BY.header, SERVED_BY.value);
      return next();
    }
    await next();
    c.res.headers.set(SERVED_BY.header, SERVED_BY.value);
  });
  // Outside the request log, so the delivery's log line carries the span's trace id.
  // Each webhook route its own span name: the default account's and a registered account's (by route, never the raw path).
  if (options.tracer && options.webhooks)
    for (const route of ["/webhooks", "/webhooks/:account"])
      app.use(route, serverSpan(options.tracer, { route, attributes: deliveryAttributes }));
  app.use(requestLog(options.logger));
  app.route("/", healthRoutes(options.ready));
  if (options.webhooks) app.route("/webhooks", webhookRoute(options.webhooks));
  options.mount?.(app);
  app.notFound((c) => c.json(errorBody("not_found", `no route for ${c.req.method} ${boundedPath(c.req.path)}`), 404));
  app.onError((err, c) => {
    const failure = toHttpFailure(err);
    if (failure.status >= 500) options.onServerError?.(failure.status);
    if (failure.status >= 500 && failure.status !== 503) options.logger.error({ err }, "unhandled error");
    return c.json(failure.body, failure.status, failure.headers);
  });
  return app;
}

function deliveryAttributes(c: Context<AppEnv>) {
  return { "svc.event.id": c.get("eventId"), "svc.event.type": c.get("eventType"), "svc.event.duplicate": c.get("duplicate") };
}

/**
 * /healthz: the process is alive. /readyz: Redis answers, so events can be accepted. The ping is
 * bounded: a connection that queues commands while Redis is away would otherwise hold the probe
 * open forever (the worker role's connection never gives up).
 */
function healthRoutes(ping: () => Promise<void>): Hono<AppEnv> {
  const route = new Hono<AppEnv>();
  route.use("/healthz", quietRequest);
  route.use("/readyz", quietRequest);
  route.get("/healthz", (c) => c.json({ status: "ok" }));
  route.get("/readyz", async function readyz(c) {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), REDIS_WAIT_MS)));
    try {
      const outcome = await Promise.race([ping(), deadline]);
      if (outcome === "timeout") return c.json(errorBody("not_ready", `readiness check did not answer within ${REDIS_WAIT_MS} ms`), 503);
      return c.json({ status: "ready" });
    } catch (err) {
      // Another error's text may name a host: not for an unauthenticated route.
      return c.json(errorBody("not_ready", err instanceof NotReadyError ? err.reason : "Redis does not answer"), 503);
    } finally {
      clearTimeout(timer);
    }
  });
  return route;
}

export interface RunningServer {
  url: string;
  server: ServerType;
  /** Stops accepting, lets in-flight requests finish, then cuts what is left at the deadline. */
  close(deadlineMs: number): Promise<void>;
}

/**
 * Starts the edge on host:port (port 0 picks a free one), bounding what a client may hold: header
 * and request time (408 and close past them), header size (431), open connections.
 */
export function listen(app: Hono<AppEnv>, host: string, port: number, limits: HttpLimits): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    const serverOptions = {
      requestTimeout: limits.requestTimeoutMs,
      // Since Node 18 the header timer runs from a request's first byte, so an idle keep-alive
      // socket is not cut by it (checked by test/integration/edge-limits): it may be shorter than
      // keepAliveTimeout, which stays above load balancers' 60 s idle timeout.
      headersTimeout: limits.headersTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      maxHeaderSize: limits.maxHeaderBytes,
      // Node checks the two timeouts only this often (30 s by default): a fraction of the shorter.
      connectionsCheckingInterval: Math.max(25, Math.min(1000, Math.floor(limits.headersTimeoutMs / 4))),
    };
    const server = serve({ fetch: app.fetch, hostname: host, port, serverOptions }, (info) => {
      const http = server as Server;
      http.maxConnections = limits.maxConnections;
      const shownHost = host.includes(":") ? `[${host}]` : host;
      resolve({
        url: `http://${shownHost === "0.0.0.0" ? "127.0.0.1" : shownHost}:${info.port}`,
        server,
        close: (deadlineMs) =>
          new Promise<void>((done) => {
            const cut = setTimeout(() => http.closeAllConnections(), deadlineMs);
            // A keep-alive socket goes idle once its in-flight response is sent and would then
            // hold close() open until the client drops it: close idle sockets as they appear.
            const sweep = setInterval(() => http.closeIdleConnections(), 50);
            http.close(() => {
              clearTimeout(cut);
              clearInterval(sweep);
              done();
            });
            http.closeIdleConnections();
          }),
      });
    });
    server.once("error", reject);
  });
}
