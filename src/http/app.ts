import type { Tracer } from "@opentelemetry/api";
import { Hono, type Context } from "hono";
import type { Logger } from "pino";
import type { AppEnv } from "./context.js";
import { errorBody, toHttpFailure } from "./errors.js";
import { healthRoutes } from "./health-routes.js";
import { serverSpan } from "../tracing/tracing.js";
import { boundedPath, requestLog } from "./request-log.js";
import { webhookRoute, type WebhookRouteOptions } from "./webhook-route.js";

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
  // Outside the request log, so the delivery's log line carries the span's trace id.
  if (options.tracer && options.webhooks)
    app.use("/webhooks", serverSpan(options.tracer, { route: "/webhooks", attributes: deliveryAttributes }));
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
