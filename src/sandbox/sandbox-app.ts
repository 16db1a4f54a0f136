import { Hono } from "hono";
import type { Logger } from "pino";
import type { ApiRequestRecord } from "./api-gate.js";
import { apiRoutes, type ListBehaviour } from "./api-routes.js";
import { controlRoutes } from "./control-routes.js";
import type { createFaults } from "./faults.js";
import { createKeyRateLimit } from "./rate-limit.js";
import type { StateView } from "./state-view.js";
import type { SandboxStore } from "./store.js";
import { SandboxError } from "./types.js";
import type { WebhookEndpoint } from "./webhook-sender.js";

/** The sandbox's HTTP app: the API under /api/v1, its controls under /_sandbox, errors as the API's. */
export function createSandboxApp(deps: {
  store: SandboxStore;
  apiKeys: readonly string[];
  unmetered: ReadonlySet<string>;
  rateLimit: { max: number; windowMs: number };
  faults: ReturnType<typeof createFaults>;
  requestLog: ApiRequestRecord[];
  lists: ListBehaviour | undefined;
  state: StateView;
  addWebhook: (endpoint: WebhookEndpoint) => void;
  silently: <T>(change: () => T) => T;
  logger: Logger | undefined;
}): Hono {
  const { store, unmetered, faults, requestLog, state } = deps;
  const meter = createKeyRateLimit(deps.rateLimit.max, deps.rateLimit.windowMs);
  const app = new Hono();
  app.route(
    "/api/v1",
    apiRoutes({
      store,
      apiKeys: new Set([...deps.apiKeys, ...unmetered]),
      admit: (key) => (unmetered.has(key) ? 0 : meter(key)),
      faults,
      requestLog,
      ...(deps.lists ? { lists: deps.lists } : {}),
    }),
  );
  app.route(
    "/_sandbox",
    controlRoutes({
      store,
      snapshot: () => ({
        restaurants: state.restaurants(),
        orders: state.orders(),
        bookings: state.bookings(),
        menuItems: state.menuItems(),
        reviews: state.reviews(),
      }),
      requestLog,
      faults,
      addWebhook: deps.addWebhook,
      history: state.history,
      silently: deps.silently,
    }),
  );
  app.notFound((c) => c.json({ error: { code: "not_found", message: "no such endpoint" } }, 404));
  app.onError((err, c) => {
    if (err instanceof SandboxError) return c.json({ error: { code: err.code, message: err.message } }, err.status);
    deps.logger?.error({ err }, "sandbox error");
    return c.json({ error: { code: "internal", message: "internal error" } }, 500);
  });
  return app;
}
