import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { HonoAdapter } from "@bull-board/hono";
import { serveStatic } from "@hono/node-server/serve-static";
import type { Queue } from "bullmq";
import type { Hono } from "hono";

export const DASHBOARD_PATH = "/admin/queues";

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
  return adapter.registerPlugin();
}
