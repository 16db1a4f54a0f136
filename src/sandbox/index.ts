import { serve } from "@hono/node-server";
import type { Hono } from "hono";
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import type { Server } from "node:http";
import { join } from "node:path";
import type { Logger } from "pino";
import { DEFAULTS } from "../config/defaults.js";
import { expectDefined } from "../errors.js";
import { API_KEY_PREFIX } from "../base/api-key.js";
import { type ApiRequestRecord, type ListBehaviour, createFaults, createKeyRateLimit, createSandboxApp } from "./app.js";
import { seededRandom, seedHistory, seedSample, type HistoryOptions, createStore, type SandboxStore } from "./store.js";
import {
  createRecordHistory,
  type RecordHistory,
  reservedIds,
  readStateFile,
  stateFileJson,
  startStateSaver,
  stateView,
} from "./state-file.js";
import { startSimulation, startTraffic, type Traffic, type TrafficOptions } from "./traffic.js";
import { SandboxError } from "./records.js";
import { createWebhookSender, type WebhookEndpoint } from "./webhook-sender.js";

/** The API's per-key limit (120 requests a minute): the budget the service assumes by default (API_RATE, API_RATE_WINDOW_SECONDS). */
export const SANDBOX_RATE_LIMIT = { max: DEFAULTS.apiRate, windowMs: DEFAULTS.apiRateWindowMs };

/** Restaurants a company has when `restaurants` is not given. */
export const SANDBOX_RESTAURANTS = 3;

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
  /** @defaultValue SANDBOX_RESTAURANTS */
  restaurants?: number;
  /**
   * A company's history ending now instead of the small sample: `orders` over `days` (old ones
   * finished, the last hour's in flight), bookings over those days and two weeks ahead. Seeded
   * straight into the store: no webhooks. Menus: `menuItems` per restaurant (default 6).
   */
  history?: HistoryOptions;
  /** List order and the bookings' upper date bound, where the spec is silent (defaults as docs/upstream.md). */
  lists?: ListBehaviour;
  simulate?: { intervalMs: number } | false;
  /**
   * Keeps the sandbox across runs in `dir` (the dev stack's data dir): its records are loaded at
   * start instead of the seed (unless `fresh`) and saved every `saveIntervalMs` (default 10 s) and
   * at close, the newest 10,000 orders, bookings and reviews; new records take ids that no run
   * over `dir` gave before, a crashed one included (`fresh` keeps that counter).
   */
  keep?: { dir: string; fresh?: boolean; saveIntervalMs?: number };
  logger?: Logger;
}

/**
 * A local, in-memory stand-in for the upstream API (like stripe-mock): every endpoint of the
 * spec with the decisions of docs/upstream.md, signed webhooks with retries, per-key rate limit,
 * failure injection and a live simulation. Never imported by the production path.
 */
export function createSandbox(options: SandboxOptions = {}) {
  const apiKeys = options.apiKeys ?? [`svc_live_${randomBytes(16).toString("hex")}`];
  const unmetered = new Set(options.unmeteredKeys ?? []);
  for (const key of [...apiKeys, ...unmetered])
    if (!key.startsWith(API_KEY_PREFIX))
      throw new SandboxError(400, "invalid_request", `sandbox API keys must start with ${API_KEY_PREFIX}`);
  const random = seededRandom(options.seed ?? 1);
  const sender = createWebhookSender(options.delivery, options.logger);
  for (const endpoint of options.webhooks ?? []) sender.add(endpoint);
  const history = createRecordHistory();
  // A switch that keeps a change's webhook from being sent (its history still records it).
  let silent = false;
  const kept = options.keep && keptFiles(options.keep.dir);
  const store = createStore(
    random,
    (type, resource) => {
      history.remember(resource);
      if (!silent) sender.send(type, resource);
    },
    { willChange: history.rememberBefore, ...(kept ? { newId: reservedIds(kept.ids, (id) => store.record(id) !== undefined) } : {}) },
  );
  const saver = fillStore(store, history, options, kept);
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
  const state = stateView(store, history);
  const meter = createKeyRateLimit(options.rateLimit ?? SANDBOX_RATE_LIMIT);
  const app = createSandboxApp({
    store,
    apiKeys: new Set([...apiKeys, ...unmetered]),
    admit: (key) => (unmetered.has(key) ? 0 : meter(key)),
    faults,
    requestLog,
    lists: options.lists,
    state,
    addWebhook: sender.add,
    silently,
    logger: options.logger,
  });

  let stopSimulation = options.simulate ? startSimulation(store, options.simulate.intervalMs, options.logger) : undefined;
  const traffics: Traffic[] = [];
  let server: Awaited<ReturnType<typeof serveApp>> | undefined;
  let closed = false;

  const sandbox = {
    app,
    apiKey: expectDefined(apiKeys[0], "the sandbox needs at least one API key"),
    /** Every key the sandbox accepts, metered or not: the keys that pick this company on a shared server (companies.ts). */
    acceptedKeys: [...apiKeys, ...unmetered] as readonly string[],
    url: undefined as string | undefined,
    async listen({ port = 0, host = "127.0.0.1" }: { port?: number; host?: string } = {}): Promise<string> {
      server = await serveApp(app, port, host);
      sandbox.url = server.url;
      return server.url;
    },
    async close() {
      if (closed) return;
      closed = true;
      stopSimulation?.();
      for (const t of traffics) t.stop();
      sender.close();
      await server?.close();
      await saver?.stop();
    },
    requestLog,
    deliveries: sender.deliveries,
    faults: { add: faults.add, clear: faults.clear },
    addWebhook: sender.add,
    removeWebhooks: sender.removeAll,
    /** Stops the simulated traffic (if any); the API and deliveries go on. */
    stopSimulation() {
      stopSimulation?.();
      stopSimulation = undefined;
    },
    /**
     * Starts live traffic of a company's shape through the same actions (webhooks as usual);
     * `stop()` ends it. Its `changes` list what it did and when, for freshness measurements.
     */
    startTraffic(trafficOptions: TrafficOptions): Traffic {
      if (!(trafficOptions.eventsPerSecond > 0)) throw new SandboxError(400, "invalid_request", "eventsPerSecond must be above 0");
      const traffic = startTraffic({ store, silently, logger: options.logger }, trafficOptions);
      traffics.push(traffic);
      return traffic;
    },
    /** Resolves when no webhook delivery is in flight or waiting for a retry. */
    idle: sender.idle,
    /**
     * Runs `change` (actions on the sandbox) without sending their webhooks: the upstream changed
     * and nobody was told, as when a real delivery is lost for good. Its history still records it.
     */
    silently,
    state,
    actions: store.actions,
  };
  return sandbox;
}

export type Sandbox = ReturnType<typeof createSandbox>;

/** How often `keep` saves the sandbox's records when `keep.saveIntervalMs` is not given. */
export const SANDBOX_SAVE_INTERVAL_MS = 10_000;

/** The file in `keep.dir` that holds the sandbox's records (state-file.ts). */
export const SANDBOX_STATE_FILE = "sandbox-state.json";

/** Where `keep` keeps the sandbox: its records (state-file.ts) and its id counter (reservedIds, state-file.ts). */
function keptFiles(dir: string): { records: string; ids: string } {
  mkdirSync(dir, { recursive: true });
  return { records: join(dir, SANDBOX_STATE_FILE), ids: join(dir, "sandbox-ids.json") };
}

/** The store's first records: an earlier run's (with `keep`, unless `fresh`), a seeded history, or the small sample. */
function fillStore(store: SandboxStore, history: RecordHistory, options: SandboxOptions, kept: { records: string } | undefined) {
  const saved = kept && !options.keep?.fresh ? readStateFile(kept.records) : undefined;
  if (saved) {
    store.load(saved);
    history.load(saved.history);
  } else if (options.history) seedHistory(store, options.history, options.restaurants ?? SANDBOX_RESTAURANTS);
  else seedSample(store, options.restaurants ?? SANDBOX_RESTAURANTS);
  if (!kept) return undefined;
  return startStateSaver({
    file: kept.records,
    json: () => stateFileJson(store, history),
    changes: store.changes,
    current: saved !== undefined,
    intervalMs: options.keep?.saveIntervalMs ?? SANDBOX_SAVE_INTERVAL_MS,
    logger: options.logger,
  });
}

/** `app` listening on `host:port` (0: any free port), its URL, and a close that drops open connections. */
export function serveApp(app: Hono, port: number, host: string): Promise<{ url: string; close(): Promise<void> }> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, port, hostname: host }, (info) => {
      resolve({
        url: `http://${host === "0.0.0.0" ? "127.0.0.1" : host}:${info.port}`,
        close: () =>
          new Promise<void>((closed) => {
            const s = server as Server;
            s.close(() => closed());
            s.closeAllConnections();
          }),
      });
    });
    server.once("error", reject);
  });
}
