import { Hono } from "hono";
import type { createFaults, FaultRule } from "./faults.js";
import type { ApiRequestRecord } from "./api-gate.js";
import type { SandboxStore } from "./store.js";
import { SandboxError } from "./types.js";
import type { WebhookEndpoint } from "./webhook-sender.js";

/**
 * /_sandbox: controls for tests, demos and the CLI. Not part of the API: no auth, not rate
 * limited, not in the request log.
 */
export function controlRoutes(deps: {
  store: SandboxStore;
  snapshot: () => unknown;
  requestLog: ApiRequestRecord[];
  faults: ReturnType<typeof createFaults>;
  addWebhook: (endpoint: WebhookEndpoint) => void;
  history: (id: string) => unknown[];
  silently: <T>(change: () => T) => T;
}): Hono {
  const control = new Hono();
  control.get("/state", (c) => c.json(deps.snapshot()));
  control.get("/requests", (c) => c.json(deps.requestLog));
  // Every state the record has had, oldest first: what really happened, to compare with what a
  // mirror observed.
  control.get("/history/:id", (c) => c.json(deps.history(c.req.param("id"))));
  control.post("/webhooks", async (c) => {
    const body = (await c.req.json().catch(() => ({}))) as Partial<WebhookEndpoint>;
    if (typeof body.url !== "string" || typeof body.secret !== "string" || !URL.canParse(body.url)) {
      throw new SandboxError(400, "invalid_request", "url (http URL) and secret are required");
    }
    deps.addWebhook({ url: body.url, secret: body.secret, thin: body.thin === true });
    return c.json({ registered: body.url }, 201);
  });
  control.post("/faults", async (c) => {
    const rule = (await c.req.json().catch(() => ({}))) as FaultRule;
    if (typeof rule.path !== "string") throw new SandboxError(400, "invalid_request", "path is required");
    deps.faults.add(rule);
    return c.json({ added: rule }, 201);
  });
  control.delete("/faults", (c) => {
    deps.faults.clear();
    return c.body(null, 204);
  });
  // Overwrites fields of a stored record with whatever JSON gives (top level; a nested object is
  // replaced whole), with no checks and no webhook: an upstream that serves a record our mirror may
  // refuse (a NUL in a diner's name, a paidAt that is no timestamp, a date like 2026-02-30).
  control.post("/records/:kind/:id", async (c) => {
    const maps: Record<string, Map<string, object>> = {
      orders: deps.store.orders,
      bookings: deps.store.bookings,
      "menu-items": deps.store.menuItems,
    };
    const map = maps[c.req.param("kind")];
    if (!map) throw new SandboxError(404, "not_found", `kinds are ${Object.keys(maps).join(", ")}`);
    const record = map.get(c.req.param("id"));
    if (!record) throw new SandboxError(404, "not_found", `no ${c.req.param("kind")} record ${c.req.param("id")}`);
    const patch: unknown = await c.req.json().catch(() => undefined);
    if (typeof patch !== "object" || patch === null || Array.isArray(patch))
      throw new SandboxError(400, "invalid_request", "the body is a JSON object of the fields to set");
    if ("id" in patch || "restaurantId" in patch) throw new SandboxError(400, "invalid_request", "id and restaurantId cannot be changed");
    Object.assign(record, patch);
    deps.store.relist(c.req.param("kind") as "orders", record);
    return c.json(record);
  });
  control.post("/actions/:name", async (c) => {
    const args = (await c.req.json().catch(() => ({}))) as Record<string, unknown>;
    const a = deps.store.actions;
    const run: Record<string, () => unknown> = {
      createOrder: () => a.createOrder(args),
      updateOrderStatus: () => a.updateOrderStatus(String(args.id), String(args.status)),
      refundOrder: () => a.refundOrder(String(args.id), args.reason),
      createBooking: () => a.createBooking(args as Parameters<typeof a.createBooking>[0]),
      cancelBooking: () => a.cancelBooking(String(args.id)),
      createReview: () => a.createReview(args),
      updateMenuItem: () => a.updateMenuItem(String(args.id), args),
    };
    const action = run[c.req.param("name")];
    if (!action) throw new SandboxError(404, "not_found", `actions are ${Object.keys(run).join(", ")}`);
    // "silent": true makes the change without sending its webhook (a delivery lost for good).
    return c.json(args.silent === true ? deps.silently(action) : action());
  });
  return control;
}
