import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import pg from "pg";
import { pino } from "pino";
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { loadConfig } from "../src/config/config.js";
import { createLogger } from "../src/logging/logger.js";
import { createSandbox, type Sandbox } from "../src/sandbox/index.js";
import type { Order } from "../src/sandbox/records.js";
import type { TrafficChange } from "../src/sandbox/traffic.js";
import { createService, type Service } from "../src/service.js";
import { RECONCILE_JOBS } from "../src/sync/reconcile-jobs.js";
import type { EventHandlers } from "../src/worker/handlers.js";
import { waitFor } from "../test/helpers/wait-for.js";
import { BENCH_SECRET } from "./lib/pool.js";
import { startServerProcess } from "./lib/server-process.js";

// Issue 22's workload, measured through the service's public surface only (env config, the
// webhook endpoint, the mirror, change events, the `backfill` command), so the same bench runs
// before and after the sync's internals change.

export const RESTAURANTS = 40;
/** The active tier's interval the bench asks for (an unknown env var is ignored by older code). */
const ACTIVE_INTERVAL_SECONDS = 60;
const RANK: Record<string, number> = { PENDING: 0, CONFIRMED: 1, PREPARING: 2, READY: 3, DELIVERED: 4, CANCELLED: 4, REFUNDED: 5 };
const keyHash = (key: string) => createHash("sha256").update(key).digest("hex").slice(0, 12);
const newKey = () => `svc_live_${randomBytes(16).toString("hex")}`;

export interface CostRow {
  historyOrders: number;
  events: number;
  apiCalls: number;
  callsPerEvent: number;
  rateLimited: number;
  secondsToMirror: number;
}
export interface FreshnessResult {
  historyOrders: number;
  seconds: number;
  changes: number;
  eventsPerSecond: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  lost: number;
  rateLimited: number;
  callsPerMinute: number;
  /** Calls per minute in the live window, by the service's budget class (its own metric). */
  callsPerMinuteByClass: Record<string, number>;
  /** Calls per minute in the live window, by what was read (kind, filter, scope), most first. */
  callsPerMinuteByRead: [string, number][];
  /** Freshness by the kind of change (`order → READY`, `booking.created`), worst p99 first. */
  freshnessByChange: [string, { changes: number; p50: number; p99: number }][];
}
export interface MissedResult {
  reachedAfterSeconds: number | null;
  source: string | null;
  waitedSeconds: number;
}
export interface FullPassResult {
  records: number;
  seconds: number;
  secondsPer10k: number;
  callsPerMinute: number;
}
export interface SyncBenchResult {
  cost: CostRow[];
  costRatio: number;
  freshness: FreshnessResult;
  missed: MissedResult;
  fullPass: FullPassResult;
  seconds: number;
}

/** One company: a sandbox with a seeded history, a key held to 120/min and an unmetered import key. */
export interface Company {
  sandbox: Sandbox;
  apiUrl: string;
  importKey: string;
  /** The company's own schema in the bench's PostgreSQL server. */
  schema: string;
  prefix: string;
  /** API calls made with the metered key since `from` (an index into the request log). */
  calls(from: number): { count: number; rateLimited: number };
  /** Those calls by what they read: kind, filter and scope (`orders status=READY company`). */
  callsByRead(from: number, to?: number): Map<string, number>;
  close(): Promise<void>;
}

export async function startCompany(orders: number, seed: number, days = 365): Promise<Company> {
  const importKey = newKey();
  const sandbox = createSandbox({
    seed,
    restaurants: RESTAURANTS,
    history: { orders, days },
    unmeteredKeys: [importKey],
    delivery: { retryDelaysMs: [200, 400, 800, 1600, 3200] },
  });
  const apiUrl = await sandbox.listen();
  const id = randomUUID().replace(/-/g, "").slice(0, 8);
  const metered = keyHash(sandbox.apiKey);
  return {
    sandbox,
    apiUrl,
    importKey,
    schema: `bench_sync_${id}`,
    prefix: `bench-s-${id}`,
    calls(from) {
      const log = sandbox.requestLog.slice(from).filter((r) => r.keyHash === metered);
      return { count: log.length, rateLimited: log.filter((r) => r.status === 429).length };
    },
    callsByRead(from, to) {
      const by = new Map<string, number>();
      for (const r of sandbox.requestLog.slice(from, to)) {
        if (r.keyHash !== metered) continue;
        const read = describeRead(r.path, r.query);
        by.set(read, (by.get(read) ?? 0) + 1);
      }
      return by;
    },
    async close() {
      await sandbox.close();
    },
  };
}

/** A list call as what it read: `orders status=READY company`, `bookings from..to restaurant`. */
export function describeRead(path: string, query: string): string {
  const params = new URLSearchParams(query);
  const kind = /\/(orders|bookings|menu)\b/.exec(path)?.[1] ?? path;
  const scope = /\/restaurants\/[^/]+\//.test(path) || params.has("restaurantId") ? "restaurant" : "company";
  const filters = [
    params.has("status") ? `status=${params.get("status")}` : "",
    params.has("from") || params.has("to") ? "window" : "",
    params.has("cursor") ? "next page" : "first page",
  ].filter(Boolean);
  return [kind, ...filters, scope].join(" ");
}

/** Where the runs meet: Redis and a PostgreSQL server (a fresh embedded one costs an initdb per run). */
export interface SyncBenchTargets {
  redisUrl: string;
  databaseUrl: string;
}

export const baseEnv = (c: Company, t: SyncBenchTargets) => ({
  REDIS_URL: t.redisUrl,
  DATABASE_URL: t.databaseUrl,
  DATABASE_SCHEMA: c.schema,
  QUEUE_PREFIX: c.prefix,
  SIGNING_SECRET: BENCH_SECRET,
  API_BASE_URL: c.apiUrl,
  LOG_LEVEL: "warn",
});

/** `svc-webhooks backfill --json` as a script runs it; resolves with its summary (stdout's one JSON document) and how long it took. */
export function backfill(env: Record<string, string>, args: string[]): Promise<{ seconds: number; summary: Record<string, unknown> }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "src/bin/cli.ts", "backfill", "--json", ...args], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("error", reject);
    child.on("exit", (code) => {
      const line = out.trim().split("\n").at(-1) ?? "";
      if (code !== 0) {
        reject(new Error(`backfill exited ${code}: ${err.slice(-500)}`));
        return;
      }
      try {
        resolve({ seconds: (performance.now() - started) / 1000, summary: JSON.parse(line) as Record<string, unknown> });
      } catch {
        reject(new Error(`backfill printed no summary: ${out.slice(-300)}`));
      }
    });
  });
}

/** The first import, fast (unmetered key, no change events), so the runs start from a full mirror. */
export const importHistory = (c: Company, t: SyncBenchTargets) =>
  backfill({ ...baseEnv(c, t), API_KEY: c.importKey, API_RATE: "1000000" }, ["--no-changes"]);

/** A change event as the bench's handler saw it. */
export interface SeenChange {
  id: string;
  status: string | undefined;
  source: string;
  at: number;
}

export async function startService(c: Company, t: SyncBenchTargets, env: Record<string, string>, seen?: SeenChange[]): Promise<Service> {
  const record = (event: { createdAt: string; data: { id: string; source: string; after: unknown } }) => {
    const after = event.data.after as { status?: string } | null;
    seen?.push({ id: event.data.id, status: after?.status, source: event.data.source, at: Date.parse(event.createdAt) || Date.now() });
    return Promise.resolve();
  };
  const handlers = { "change.order": record, "change.booking": record, "change.menu_item": record } as unknown as EventHandlers;
  const shared = {
    ...baseEnv(c, t),
    API_KEY: c.sandbox.apiKey,
    ...env,
    // BENCH_SYNC_ENV='{"SYNC_REFRESH_PACE_MAX_WAIT_MS":"5000"}': settings to try, over the bench's own.
    ...(JSON.parse(process.env.BENCH_SYNC_ENV ?? "{}") as Record<string, string>),
  };
  const config = loadConfig({ ROLE: "worker", HOST: "127.0.0.1", PORT: "0", ...shared });
  // With a timeline, the service's debug lines (a line per refresh job) go beside it.
  const timeline = process.env.BENCH_SYNC_TIMELINE;
  const logger = timeline
    ? createLogger({ level: "debug", destination: pino.destination({ dest: `${timeline}.log`, append: true }) })
    : createLogger({ level: "warn" });
  const service = await createService({ config, logger, handlers });
  await service.start();
  // The webhook edge as deployed, its own process (`serve --role web`): the two share the queues
  // and the upstream budget only through Redis.
  const web = await startServerProcess("bench/servers/edge.ts", shared);
  c.sandbox.addWebhook({ url: `${web.url}/webhooks`, secret: BENCH_SECRET });
  const stopWorker = service.stop.bind(service);
  // Every process down, as an outage row needs: the edge first, so nothing is accepted meanwhile.
  service.stop = async () => {
    await web.stop();
    await stopWorker();
  };
  return service;
}

/** ~30 order events over the whole history: 6 new orders moved twice, 12 refunds of old orders. */
function costWorkload(sandbox: Sandbox): (() => Order)[] {
  const a = sandbox.actions;
  const refundable = sandbox.state
    .orders()
    .filter((o) => o.status === "DELIVERED" && o.paidAt)
    .sort((x, y) => (x.createdAt < y.createdAt ? -1 : 1));
  const steps: (() => Order)[] = [];
  for (let i = 0; i < 12; i++) {
    const old = refundable[Math.floor(((i + 0.5) * refundable.length) / 12)];
    if (old) steps.push(() => a.refundOrder(old.id, "bench"));
  }
  for (let i = 0; i < 6; i++) {
    let id = "";
    steps.splice(i * 3, 0, () => {
      const o = a.createOrder({ restaurantId: `rest_${((i * 7) % RESTAURANTS) + 1}`, paid: true });
      id = o.id;
      return o;
    });
    steps.push(() => a.updateOrderStatus(id, "CONFIRMED"));
    steps.push(() => a.updateOrderStatus(id, "PREPARING"));
  }
  return steps;
}

/** API calls per event for ~30 order events, reconciliation off. */
async function benchCost(t: SyncBenchTargets, historyOrders: number, log: (s: string) => void): Promise<CostRow> {
  const c = await startCompany(historyOrders, 22);
  try {
    await importHistory(c, t);
    const service = await startService(c, t, { RECONCILE_INTERVAL_SECONDS: "0" });
    try {
      const from = c.sandbox.requestLog.length;
      const started = performance.now();
      const touched = new Map<string, Order>();
      for (const step of costWorkload(c.sandbox)) {
        const o = step();
        touched.set(o.id, o);
        await new Promise((r) => setTimeout(r, 500)); // paced: one event every half second
      }
      log(`sync cost (${historyOrders} orders): ${touched.size} orders changed, waiting for the mirror`);
      await waitFor(
        async () => {
          for (const o of touched.values())
            if (((await service.mirror.get("orders", o.id)) as { status?: string } | undefined)?.status !== o.status) return false;
          return true;
        },
        { timeoutMs: 420_000, intervalMs: 200, what: `the mirror to hold the changed orders (${historyOrders} orders of history)` },
      );
      const { count, rateLimited } = c.calls(from);
      const events = c.sandbox.deliveries.filter((d) => d.attempt === 1).length;
      return {
        historyOrders,
        events,
        apiCalls: count,
        callsPerEvent: count / events,
        rateLimited,
        secondsToMirror: (performance.now() - started) / 1000,
      };
    } finally {
      await service.stop();
    }
  } finally {
    await c.close();
  }
}

export const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

/** When the service's change event for a sandbox change was recorded (undefined: not yet). */
export function reachedAt(change: TrafficChange, seen: SeenChange[]): number | undefined {
  const wanted = change.status === undefined ? undefined : (RANK[change.status] ?? (change.status === "CANCELLED" ? 1 : 0));
  const booking = change.type.startsWith("booking.");
  for (const s of seen) {
    if (s.id !== change.id) continue;
    if (wanted === undefined) {
      if (s.at >= change.at - 1000) return s.at; // a menu edit: the first change seen after it
      continue;
    }
    const rank = booking ? (s.status === "CANCELLED" ? 1 : 0) : (RANK[s.status ?? ""] ?? -1);
    const want = booking ? (change.status === "CANCELLED" ? 1 : 0) : wanted;
    if (rank >= want) return s.at;
  }
  return undefined;
}

/**
 * Freshness under live traffic at the real budget, reconciliation at its defaults (the import was
 * a whole backfill, so no full pass is due yet); then, quiet, a change to an active order made
 * without its webhook.
 */
export async function benchLive(
  t: SyncBenchTargets,
  opts: {
    historyOrders: number;
    /** The sandbox's seed (another one for another run's company). @defaultValue 23 */
    seed?: number;
    eventsPerSecond: number;
    seconds: number;
    /** Keep the traffic on until the full tier's pass (due at start) completed, or `seconds` passed; no missed-webhook step. */
    untilFullPass?: boolean;
  },
  log: (s: string) => void,
): Promise<{ freshness: FreshnessResult; missed?: MissedResult; fullPass?: TrafficFullPass }> {
  const c = await startCompany(opts.historyOrders, opts.seed ?? 23);
  try {
    await importHistory(c, t);
    const seen: SeenChange[] = [];
    const service = await startService(c, t, { RECONCILE_ACTIVE_INTERVAL_SECONDS: String(ACTIVE_INTERVAL_SECONDS) }, seen);
    try {
      const from = c.sandbox.requestLog.length;
      log(
        `sync freshness: ${opts.eventsPerSecond} events/s ${opts.untilFullPass ? "until the full pass completes, at most" : "for"} ${opts.seconds} s over ${opts.historyOrders} orders of history`,
      );
      const began = Date.now();
      // The import was a whole backfill, which counts as a full pass: ask for one now, as an operator would.
      if (opts.untilFullPass) await service.worker?.syncQueue.add(RECONCILE_JOBS.full, { force: true });
      const traffic = c.sandbox.startTraffic({ eventsPerSecond: opts.eventsPerSecond });
      let fullPass: TrafficFullPass | undefined;
      if (opts.untilFullPass) fullPass = await waitForFullPass(t, c.schema, began, opts.seconds * 1000, log);
      else await new Promise((r) => setTimeout(r, opts.seconds * 1000));
      traffic.stop();
      const seconds = (Date.now() - began) / 1000;
      const windowCalls = c.calls(from);
      const windowEnd = c.sandbox.requestLog.length;
      const perMinute = (n: number) => n / (seconds / 60);
      const slots = (await service.metrics.budgetSlots.get()).values;
      const callsPerMinuteByClass = Object.fromEntries(slots.map((v) => [String(v.labels.class), perMinute(v.value)]));
      const callsPerMinuteByRead = [...c.callsByRead(from, windowEnd)]
        .map(([read, n]): [string, number] => [read, perMinute(n)])
        .sort((a, b) => b[1] - a[1]);
      const changes = traffic.changes.filter((ch) => !ch.missed);
      // Drain: every change should reach the mirror; give up on the rest after 90 s.
      await waitFor(() => changes.every((ch) => reachedAt(ch, seen) !== undefined), { timeoutMs: 90_000, intervalMs: 500 }).catch(
        () => undefined,
      );
      const delayOf = changes.map((ch) => {
        const at = reachedAt(ch, seen);
        return at === undefined ? undefined : Math.max(0, at - ch.at) / 1000;
      });
      const delays = delayOf.filter((d): d is number => d !== undefined).sort((x, y) => x - y);
      const byType = new Map<string, number[]>();
      changes.forEach((ch, i) => {
        const d = delayOf[i];
        const type = ch.type === "order.status_changed" ? `order → ${ch.status}` : ch.type;
        if (d !== undefined) byType.set(type, [...(byType.get(type) ?? []), d]);
      });
      const freshnessByChange = [...byType]
        .map(([type, ds]): [string, { changes: number; p50: number; p99: number }] => {
          ds.sort((x, y) => x - y);
          return [type, { changes: ds.length, p50: percentile(ds, 50), p99: percentile(ds, 99) }];
        })
        .sort((a, b) => b[1].p99 - a[1].p99);
      // BENCH_SYNC_TIMELINE=file: every call and change of the live window with its time, to see when the budget went where.
      if (process.env.BENCH_SYNC_TIMELINE) {
        writeFileSync(
          process.env.BENCH_SYNC_TIMELINE,
          JSON.stringify({
            t0: c.sandbox.requestLog[from]?.at,
            log: c.sandbox.requestLog
              .slice(from, windowEnd + 200)
              .map((r) => ({ at: r.at, read: describeRead(r.path, r.query), status: r.status })),
            changes: changes.map((ch, i) => ({ at: ch.at, type: ch.type, status: ch.status, d: delayOf[i] })),
          }),
        );
      }
      const freshness: FreshnessResult = {
        historyOrders: opts.historyOrders,
        seconds,
        changes: changes.length,
        eventsPerSecond: changes.length / seconds,
        p50: percentile(delays, 50),
        p90: percentile(delays, 90),
        p99: percentile(delays, 99),
        max: delays.at(-1) ?? NaN,
        lost: changes.length - delays.length,
        rateLimited: c.calls(from).rateLimited,
        callsPerMinute: perMinute(windowCalls.count),
        callsPerMinuteByClass,
        callsPerMinuteByRead,
        freshnessByChange,
      };
      if (fullPass) return { freshness, fullPass };
      return { freshness, missed: await benchMissed(c, seen, log) };
    } finally {
      await service.stop();
    }
  } finally {
    await c.close();
  }
}

/** The full tier's pass during live traffic: did it complete, in how long, over how many records. */
export interface TrafficFullPass {
  completed: boolean;
  seconds: number;
  records: number;
  pages: number;
}

/** Waits until every kind's full-tier pass that started after `since` completed (its checkpoints), or `maxMs`. */
async function waitForFullPass(
  t: SyncBenchTargets,
  schema: string,
  since: number,
  maxMs: number,
  log: (s: string) => void,
): Promise<TrafficFullPass> {
  const client = new pg.Client({ connectionString: t.databaseUrl });
  await client.connect();
  try {
    const read = async () =>
      (
        await client.query<{ kind: string; started: Date; completed: Date | null; records: string; pages: number }>(
          `select kind, pass_started_at as started, pass_completed_at as completed, records, pages from "${schema}".sync_checkpoints where tier = 'full'`,
        )
      ).rows.filter((r) => r.started.getTime() >= since - 120_000);
    let rows = await read();
    let lastLog = Date.now();
    while (Date.now() - since < maxMs) {
      rows = await read();
      if (rows.length === 3 && rows.every((r) => r.completed)) break;
      if (Date.now() - lastLog > 60_000) {
        log(`sync full pass under traffic: ${rows.map((r) => `${r.kind} ${r.records} records${r.completed ? " (done)" : ""}`).join(", ")}`);
        lastLog = Date.now();
      }
      await new Promise((r) => setTimeout(r, 5000));
    }
    const completed = rows.length === 3 && rows.every((r) => r.completed);
    const end = completed ? Math.max(...rows.map((r) => r.completed!.getTime())) : Date.now();
    return {
      completed,
      seconds: (end - Math.min(...rows.map((r) => r.started.getTime()), end)) / 1000,
      records: rows.reduce((n, r) => n + Number(r.records), 0),
      pages: rows.reduce((n, r) => n + r.pages, 0),
    };
  } finally {
    await client.end();
  }
}

/** An active order moves on upstream and its webhook never comes: when does the mirror see it? */
async function benchMissed(c: Company, seen: SeenChange[], log: (s: string) => void): Promise<MissedResult> {
  const active = c.sandbox.state
    .orders()
    .filter((o) => ["PENDING", "CONFIRMED", "PREPARING"].includes(o.status))
    .sort((x, y) => (x.createdAt < y.createdAt ? 1 : -1))[0];
  const waitedSeconds = 2 * ACTIVE_INTERVAL_SECONDS;
  if (!active) return { reachedAfterSeconds: null, source: null, waitedSeconds: 0 };
  const next = { PENDING: "CONFIRMED", CONFIRMED: "PREPARING", PREPARING: "READY" }[active.status as "PENDING"];
  log(`sync missed webhook: ${active.id} ${active.status} → ${next} silently; waiting up to ${waitedSeconds} s`);
  const at = Date.now();
  c.sandbox.silently(() => c.sandbox.actions.updateOrderStatus(active.id, next));
  const found = await waitFor(
    () => seen.find((s) => s.id === active.id && s.at >= at - 1000 && (RANK[s.status ?? ""] ?? -1) >= RANK[next]!),
    {
      timeoutMs: waitedSeconds * 1000,
      intervalMs: 250,
    },
  ).catch(() => undefined);
  return { reachedAfterSeconds: found ? (found.at - at) / 1000 : null, source: found?.source ?? null, waitedSeconds };
}

/** A full pass over a seeded history through `backfill` at the real budget (120/min, its low-priority share). */
async function benchFullPass(t: SyncBenchTargets, historyOrders: number, log: (s: string) => void): Promise<FullPassResult> {
  const c = await startCompany(historyOrders, 24);
  try {
    log(`sync full pass: backfill of ${historyOrders} orders of history at 120 calls/min`);
    const from = c.sandbox.requestLog.length;
    const { seconds, summary } = await backfill({ ...baseEnv(c, t), API_KEY: c.sandbox.apiKey }, []);
    const totals = (summary.backfilled ?? {}) as Record<string, number | { records?: number }>;
    const records = Object.values(totals).reduce<number>((n, v) => n + (typeof v === "number" ? v : (v.records ?? 0)), 0);
    return { records, seconds, secondsPer10k: (seconds / records) * 10_000, callsPerMinute: c.calls(from).count / (seconds / 60) };
  } finally {
    await c.close();
  }
}

/**
 * `npm run bench -- --only sync`: issue 22's figures in one run. The cost runs and the full pass
 * are bound by their own sandboxes' budgets, so they run side by side; the live run comes after,
 * alone, so its latencies are not the other runs' CPU.
 */
export async function benchSync(opts: SyncBenchTargets & { log: (s: string) => void }): Promise<SyncBenchResult> {
  const started = performance.now();
  const [small, large, fullPass] = await Promise.all([
    benchCost(opts, 400, opts.log),
    benchCost(opts, 20_000, opts.log),
    benchFullPass(opts, 10_000, opts.log),
  ]);
  const live = await benchLive(opts, { historyOrders: 20_000, eventsPerSecond: 7, seconds: 150 }, opts.log);
  return {
    cost: [small, large],
    costRatio: large.callsPerEvent / small.callsPerEvent,
    freshness: live.freshness,
    missed: live.missed ?? { reachedAfterSeconds: null, source: null, waitedSeconds: 0 },
    fullPass,
    seconds: (performance.now() - started) / 1000,
  };
}
