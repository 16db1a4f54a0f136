import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { HonoAdapter } from "@bull-board/hono";
import { serveStatic } from "@hono/node-server/serve-static";
import type { Queue } from "bullmq";
import { Hono, type MiddlewareHandler } from "hono";

export const DASHBOARD_PATH = "/admin/queues";

// A <link> to another host (bull-board's page links Google Fonts, and has no option to drop it).
const EXTERNAL_LINK = /<link\b[^>]*\bhref="(?:https?:)?\/\/[^"]*"[^>]*>\s*/gi;

/**
 * Drops the links to other hosts from the dashboard's HTML: an operator's page loads nothing
 * from elsewhere (the fonts fall back to the system's). Its own assets are untouched.
 */
function onlyOwnHost(): MiddlewareHandler {
  return async function dropExternalLinks(c, next) {
    await next();
    if (!(c.res.headers.get("content-type") ?? "").startsWith("text/html")) return;
    const html = (await c.res.text()).replace(EXTERNAL_LINK, "");
    const headers = new Headers(c.res.headers);
    headers.delete("content-length");
    c.res = new Response(html, { status: c.res.status, headers });
  };
}

/** bull-board's queue dashboard as Hono routes (the caller puts the admin token in front). */
export function dashboardRoutes(queues: readonly Queue[]): Hono {
  const adapter = new HonoAdapter(serveStatic);
  adapter.setBasePath(DASHBOARD_PATH);
  createBullBoard({
    queues: queues.map((q) => new BullMQAdapter(q)),
    serverAdapter: adapter,
    options: {
      uiConfig: {
        boardTitle: "svc-webhooks",
        // The event log and the mirror sit beside the queues (same admin token).
        miscLinks: [
          { text: "Console", url: "/console" },
          { text: "Event log", url: "/events" },
          { text: "Failed events", url: "/events?status=failed" },
          { text: "Mirror: orders", url: "/mirror/orders" },
          { text: "Metrics", url: "/metrics" },
        ],
      },
    },
  });
  const routes = new Hono();
  routes.use("*", onlyOwnHost());
  routes.route("/", adapter.registerPlugin());
  return routes;
}
