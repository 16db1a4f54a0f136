import { randomBytes } from "node:crypto";
import { serve, type ServerType } from "@hono/node-server";
import { Hono } from "hono";
import type { Logger } from "pino";
import { apiRoutes, type ApiRequestRecord, type ListBehaviour } from "./api-routes.js";
import { controlRoutes } from "./control-routes.js";
import { createFaults, type FaultRule } from "./faults.js";
import { seededRandom } from "./random.js";
import { createKeyRateLimit } from "./rate-limit.js";
import { seedHistory, type HistoryOptions } from "./seed-history.js";
import { startSimulation } from "./simulation.js";
import { createStore } from "./store.js";
import { startTraffic, type Traffic, type TrafficChange, type TrafficOptions } from "./traffic.js";
import { SandboxError, type Booking, type MenuItem, type Order, type Review } from "./types.js";
import { createWebhookSender, DEFAULT_RETRY_DELAYS_MS, type DeliveryRecord, type WebhookEndpoint } from "./webhook-sender.js";
import { expectDefined } from "../expect-defined.js";

export type {
  ApiRequestRecord,
  DeliveryRecord,
  FaultRule,
  HistoryOptions,
  ListBehaviour,
  Traffic,
  TrafficChange,
  TrafficOptions,
  WebhookEndpoint,
};
export type { Booking, MenuItem, Order, OrderItem, Review, Restaurant } from "./types.js";
export { SandboxError } from "./types.js";

export interface SandboxOptions {
  /** Accepted keys (each svc_live_…); default one generated key. */
  apiKeys?: string[];
  rateLimit?: { max: number; windowMs: number };
  /**
   * More accepted keys that the rate limit does not meter (each svc_live_…): a bench's or a test's
   * fast import beside a key held to the real budget.
   */
  unmeteredKeys?: string[];
  webhooks?: WebhookEndpoint[];
  delivery?: { timeoutMs?: number; retryDelaysMs?: number[] };
  /** Same seed, same seed data (default 1). */
  seed?: number;
  restaurants?: number;
  /**
   * A company's history ending now instead of the small sample: `orders` over `days` (old ones
   * finished, the last hour's in flight), bookings over those days and two weeks ahead. Seeded
   * straight into the store: no webhooks. Menus: `menuItems` per restaurant (default 6).
   */
  history?: HistoryOptions & { menuItems?: number };
  /** List order and the bookings' upper date bound, where the spec is silent (defaults as docs/upstream.md). */
  lists?: ListBehaviour;
  simulate?: { intervalMs: number } | false;
  logger?: Logger;
}

export interface Sandbox {
  app: Hono;
  apiKey: string;
  url: string | undefined;
  listen(opts?: { port?: number; host?: string }): Promise<string>;
  close(): Promise<void>;
  requestLog: ApiRequestRecord[];
  deliveries: DeliveryRecord[];
  faults: { add(rule: FaultRule): void; clear(): void };
  addWebhook(endpoint: WebhookEndpoint): void;
  removeWebhooks(): void;
  /** Stops the simulated traffic (if any); the API and deliveries go on. */
  stopSimulation(): void;
  /**
   * Starts live traffic of a company's shape through the same actions (webhooks as usual);
   * `stop()` ends it. Its `changes` list what it did and when, for freshness measurements.
   */
  startTraffic(options: TrafficOptions): Traffic;
  /** Resolves when no webhook delivery is in flight or waiting for a retry. */
  idle(): Promise<void>;
  /**
   * Runs `change` (actions on the sandbox) without sending their webhooks: the upstream changed
   * and nobody was told, as when a real delivery is lost for good. Its history still records it.
   */
  silently<T>(change: () => T): T;
  state: {
    restaurants(): { id: string; name: string }[];
    orders(): Order[];
    bookings(): Booking[];
    menuItems(): MenuItem[];
    reviews(): Review[];
    /**
     * Every state a record (order, booking, menu item or review) has had, oldest first: its seeded
     * or created state, then one copy after each change. Empty for an unknown id.
     */
    history(id: string): unknown[];
  };
  actions: ReturnType<typeof createStore>["actions"];
}

/**
 * A local, in-memory stand-in for the upstream API (like stripe-mock): every endpoint of the
 * spec with the decisions of docs/upstream.md, signed webhooks with retries, per-key rate limit,
 * failure injection and a live simulation. Never imported by the production path.
 */
export function createSandbox(options: SandboxOptions = {}): Sandbox {
  const apiKeys = options.apiKeys ?? [`svc_live_${randomBytes(16).toString("hex")}`];
  const unmetered = new Set(options.unmeteredKeys ?? []);
  for (const key of [...apiKeys, ...unmetered])
    if (!key.startsWith("svc_live_")) throw new SandboxError(400, "invalid_request", "sandbox API keys must start with svc_live_");
  const random = seededRandom(options.seed ?? 1);
  const sender = createWebhookSender({
    timeoutMs: options.delivery?.timeoutMs ?? 10_000,
    retryDelaysMs: options.delivery?.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS,
    logger: options.logger,
  });
  for (const endpoint of options.webhooks ?? []) sender.add(endpoint);
  // Every state of every changed record (from its state before the first change, or its creation),
  // and a switch that keeps a change's webhook from being sent. A record never changed has its
  // current state as its history, so a seeded history of a million records costs no copies.
  const history = new Map<string, unknown[]>();
  const remember = (resource: { id: string }) => {
    const states = history.get(resource.id) ?? [];
    states.push(structuredClone(resource));
    history.set(resource.id, states);
  };
  let silent = false;
  const store = createStore(
    random,
    (type, resource) => {
      remember(resource);
      if (!silent) sender.send(type, resource);
    },
    () => new Date(),
    (before) => {
      if (!history.has(before.id)) remember(before);
    },
  );
  if (options.history) {
    store.seedRestaurants(options.restaurants ?? 3, options.history.menuItems ?? 6);
    seedHistory(store, options.history);
  } else store.seed(options.restaurants ?? 3);
  const silently = <T>(change: () => T): T => {
    const was = silent;
    silent = true;
    try {
      return change();
    } finally {
      silent = was;
    }
  };
  const requestLog: ApiRequestRecord[] = [];
  const faults = createFaults();
  const rate = options.rateLimit ?? { max: 120, windowMs: 60_000 };
  const copy = <T>(map: Map<string, T>) => [...map.values()].map((v) => structuredClone(v));
  const state = {
    restaurants: () => store.restaurants.map((r) => ({ ...r })),
    orders: () => copy(store.orders),
    bookings: () => copy(store.bookings),
    menuItems: () => copy(store.menuItems),
    reviews: () => copy(store.reviews),
    history: (id: string) => {
      const current = store.orders.get(id) ?? store.bookings.get(id) ?? store.menuItems.get(id) ?? store.reviews.get(id);
      return structuredClone(history.get(id) ?? (current ? [current] : []));
    },
  };

  const meter = createKeyRateLimit(rate.max, rate.windowMs);
  const app = new Hono();
  app.route(
    "/api/v1",
    apiRoutes({
      store,
      apiKeys: new Set([...apiKeys, ...unmetered]),
      admit: (key) => (unmetered.has(key) ? 0 : meter(key)),
      faults,
      requestLog,
      ...(options.lists ? { lists: options.lists } : {}),
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
      addWebhook: sender.add,
      history: state.history,
      silently,
    }),
  );
  app.notFound((c) => c.json({ error: { code: "not_found", message: "no such endpoint" } }, 404));
  app.onError((err, c) => {
    if (err instanceof SandboxError) return c.json({ error: { code: err.code, message: err.message } }, err.status);
    options.logger?.error({ err }, "sandbox error");
    return c.json({ error: { code: "internal", message: "internal error" } }, 500);
  });

  let stopSimulation = options.simulate ? startSimulation(store, random, options.simulate.intervalMs, options.logger) : undefined;
  const traffics: Traffic[] = [];
  let server: ServerType | undefined;
  let closed = false;

  const sandbox: Sandbox = {
    app,
    apiKey: expectDefined(apiKeys[0], "the sandbox needs at least one API key"),
    url: undefined,
    listen({ port = 0, host = "127.0.0.1" } = {}) {
      return new Promise((resolve, reject) => {
        server = serve({ fetch: app.fetch, port, hostname: host }, (info) => {
          sandbox.url = `http://${host === "0.0.0.0" ? "127.0.0.1" : host}:${info.port}`;
          resolve(sandbox.url);
        });
        server.once("error", reject);
      });
    },
    async close() {
      if (closed) return;
      closed = true;
      stopSimulation?.();
      for (const t of traffics) t.stop();
      sender.close();
      if (server) {
        const s = server as import("node:http").Server;
        await new Promise<void>((resolve) => {
          s.close(() => resolve());
          s.closeAllConnections();
        });
      }
    },
    requestLog,
    deliveries: sender.deliveries,
    faults: { add: faults.add, clear: faults.clear },
    addWebhook: sender.add,
    removeWebhooks: sender.removeAll,
    stopSimulation() {
      stopSimulation?.();
      stopSimulation = undefined;
    },
    startTraffic(trafficOptions) {
      if (!(trafficOptions.eventsPerSecond > 0)) throw new SandboxError(400, "invalid_request", "eventsPerSecond must be above 0");
      const traffic = startTraffic({ store, silently, ...(options.logger ? { logger: options.logger } : {}) }, trafficOptions);
      traffics.push(traffic);
      return traffic;
    },
    idle: sender.idle,
    silently,
    state,
    actions: store.actions,
  };
  return sandbox;
}
