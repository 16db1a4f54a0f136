import type { Queue } from "bullmq";
import type { Hono } from "hono";
import { requireAdminToken } from "./admin-auth.js";
import type { AppEnv } from "./context.js";
import { DASHBOARD_PATH, dashboardRoutes } from "./dashboard.js";
import { denyFraming } from "./deny-framing.js";
import { favicon, FAVICON_PATH } from "./favicon.js";
import { eventRoutes, type EventLogReader } from "./event-routes.js";
import { mirrorRoutes, type MirrorReader } from "./mirror-routes.js";
import type { Logger } from "pino";
import { operatorActionRoutes, type OperatorActionsPort } from "./operator-action-routes.js";
import { recordRoutes, type RecordReader } from "./record-routes.js";
import { requireSameOrigin } from "./same-origin.js";

export interface OperatorRoutesOptions {
  adminToken: string;
  mirror: MirrorReader;
  events: EventLogReader;
  /** Prometheus text of the service's registry. */
  metrics: () => Promise<{ contentType: string; body: string }>;
  /** The queues the dashboard shows. */
  queues: readonly Queue[];
  /** The write API (replays, reconcile, backfill) and the logger its audit lines go to. */
  actions?: { port: OperatorActionsPort; logger: Logger };
  /** A record's story and "refresh it now" (GET /records/{kind}/{id}, POST …/refresh). */
  records?: RecordReader;
}

/**
 * Mounts the operator surface: /mirror, /events, /metrics and the /admin/queues dashboard. Framing
 * is denied on every answer; the token is checked first (a 401 tells nothing more), then the
 * cross-site check, so a page the operator visits cannot act with their credentials.
 */
export function mountOperatorRoutes(app: Hono<AppEnv>, options: OperatorRoutesOptions): void {
  const guard = [denyFraming(), requireAdminToken(options.adminToken), requireSameOrigin()] as const;
  for (const path of [
    "/mirror",
    "/mirror/*",
    "/events",
    "/events/*",
    "/metrics",
    "/sync/*",
    "/records/*",
    DASHBOARD_PATH,
    `${DASHBOARD_PATH}/*`,
  ])
    app.use(path, ...guard);
  app.route("/mirror", mirrorRoutes(options.mirror));
  // Before the event log's routes: /events/replay and /events/replays/{id} are not event ids.
  if (options.actions) app.route("/", operatorActionRoutes(options.actions.port, options.actions.logger));
  app.route("/events", eventRoutes(options.events));
  if (options.records) app.route("/records", recordRoutes(options.records));
  app.get("/metrics", async (c) => {
    const { contentType, body } = await options.metrics();
    return c.body(body, 200, { "Content-Type": contentType });
  });
  app.route(DASHBOARD_PATH, dashboardRoutes(options.queues));
  app.get(FAVICON_PATH, favicon);
}
