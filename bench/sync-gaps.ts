import type { TrafficChange } from "../src/sandbox/traffic.js";
import { nextStatus } from "../src/sandbox/records.js";
import { OPEN_ORDER_STATUSES } from "../src/upstream/models.js";
import type { Service } from "../src/service.js";
import { waitFor } from "../test/helpers/wait-for.js";
import {
  backfill,
  baseEnv,
  importHistory,
  percentile,
  reachedAt,
  startCompany,
  startService,
  type Company,
  type SeenChange,
  type SyncBenchTargets,
} from "./sync.js";

// Issue 32's rows: where the mirror may be wrong (a company's first day, an outage of the
// endpoint) and how fast the service makes it right again, against the physical limit of the
// API: 120 calls a minute × 100 records a page.

/** Records a minute the API can hand out at most: 120 calls × 100 records a page. */
export const PHYSICAL_RECORDS_PER_MINUTE = 120 * 100;

export interface FirstDayResult {
  historyOrders: number;
  /** Live traffic during the backfill: 0 is the backfill with nothing else running. */
  eventsPerSecond: number;
  records: number;
  seconds: number;
  recordsPerMinute: number;
  /** recordsPerMinute ÷ PHYSICAL_RECORDS_PER_MINUTE. */
  ofPhysicalLimit: number;
  callsPerMinute: number;
  /** Calls to the company's unfiltered order list (first and next pages): one walk is the list's pages. */
  orderListCalls: number;
  /** The calls during the backfill by what they read (kind, filter, scope), most first. */
  callsByRead: [string, number][];
  rateLimited: number;
  /** Live webhooks during the backfill: change → change event. */
  liveChanges: number;
  liveP99: number;
  liveMax: number;
  liveLost: number;
}

export interface OutageResult {
  historyOrders: number;
  outageSeconds: number;
  /** Records changed upstream while every process was down (no webhook reached the service). */
  changedRecords: number;
  /** The changes made meanwhile by type (`order.refunded`, `order → READY`, …). */
  changesByType: Record<string, number>;
  /** From the restart until the mirror held every change made meanwhile (null: not within the wait). */
  secondsToRight: number | null;
  /** The same for the orders alone (new orders, moves, refunds of recent and old orders). */
  ordersSecondsToRight: number | null;
  /** API calls from the restart until then (or until the wait ended). */
  calls: number;
  /** Those calls by what they read (kind, filter, scope), most first. */
  callsByRead: [string, number][];
  /** Where the seconds to orders right went: the restart to the first API call, and the calls until orders were right, by read. */
  firstCallSeconds: number | null;
  callsByReadUntilOrdersRight: [string, number][];
  /** Records still wrong when the wait ended (0 when it succeeded). */
  stillWrong: number;
  rateLimited: number;
}

/** The unfiltered company-wide order list: what a whole-list walk of orders reads. */
const isOrderListCall = (path: string, query: string) => {
  const q = new URLSearchParams(query);
  return path.endsWith("/orders") && !q.has("status") && !q.has("restaurantId");
};

/**
 * A company's first day: the service runs with reconciliation at its defaults over an empty mirror
 * while `eventsPerSecond` of live traffic arrives (0: nothing else runs), and the operator runs
 * `backfill` at the real 120 calls/min. Records a minute of the backfill as a share of the physical
 * limit, and the webhooks' freshness meanwhile.
 */
async function benchFirstDay(
  t: SyncBenchTargets,
  historyOrders: number,
  eventsPerSecond: number,
  log: (s: string) => void,
): Promise<FirstDayResult> {
  const c = await startCompany(historyOrders, 27, 30);
  try {
    const seen: SeenChange[] = [];
    const service = await startService(c, t, { RECONCILE_ACTIVE_INTERVAL_SECONDS: "60" }, seen);
    try {
      log(`sync first day: backfill of ${historyOrders} orders (30 days) at 120 calls/min, ${eventsPerSecond} event/s of live traffic`);
      const from = c.sandbox.requestLog.length;
      const traffic = eventsPerSecond > 0 ? c.sandbox.startTraffic({ eventsPerSecond }) : { changes: [], stop: () => undefined };
      let result: { seconds: number; summary: Record<string, unknown> };
      try {
        result = await backfill({ ...baseEnv(c, t), API_KEY: c.sandbox.apiKey }, []);
      } finally {
        traffic.stop();
      }
      const records = summedRecords(result.summary);
      const calls = c.calls(from);
      const orderListCalls = c.sandbox.requestLog.slice(from).filter((r) => isOrderListCall(r.path, r.query)).length;
      const callsByRead = [...c.callsByRead(from)].sort((a, b) => b[1] - a[1]);
      const live = await liveFreshness(traffic.changes, seen);
      const recordsPerMinute = records / (result.seconds / 60);
      return {
        historyOrders,
        eventsPerSecond,
        records,
        seconds: result.seconds,
        recordsPerMinute,
        ofPhysicalLimit: recordsPerMinute / PHYSICAL_RECORDS_PER_MINUTE,
        callsPerMinute: calls.count / (result.seconds / 60),
        orderListCalls,
        callsByRead,
        rateLimited: calls.rateLimited,
        ...live,
      };
    } finally {
      await service.stop();
    }
  } finally {
    await c.close();
  }
}

/** Freshness of the webhook-borne changes among `changes` (30 s to drain after the load). */
async function liveFreshness(changes: TrafficChange[], seen: SeenChange[]) {
  const live = changes.filter((ch) => !ch.missed);
  await waitFor(() => live.every((ch) => reachedAt(ch, seen) !== undefined), { timeoutMs: 30_000, intervalMs: 500 }).catch(() => undefined);
  const delays = live
    .map((ch) => {
      const at = reachedAt(ch, seen);
      return at === undefined ? undefined : Math.max(0, at - ch.at) / 1000;
    })
    .filter((d): d is number => d !== undefined)
    .sort((a, b) => a - b);
  return {
    liveChanges: live.length,
    liveP99: percentile(delays, 99),
    liveMax: delays.at(-1) ?? NaN,
    liveLost: live.length - delays.length,
  };
}

const summedRecords = (summary: Record<string, unknown>) =>
  Object.values((summary.backfilled ?? {}) as Record<string, number | { records?: number }>).reduce<number>(
    (n, v) => n + (typeof v === "number" ? v : (v.records ?? 0)),
    0,
  );

/**
 * An outage: the service runs over an imported history with live traffic, every process stops for
 * `outageSeconds` while the upstream goes on (new orders through the kitchen, recent orders
 * refunded, bookings, menu edits; no webhook reaches anyone), then the service starts again.
 * Measures the seconds and API calls from the restart until the mirror holds every change made
 * meanwhile, while the traffic (and its webhooks) goes on.
 */
export async function benchOutage(
  t: SyncBenchTargets,
  opts: { historyOrders: number; outageSeconds: number; seed: number },
  log: (s: string) => void,
): Promise<OutageResult> {
  const c = await startCompany(opts.historyOrders, opts.seed, 30);
  try {
    await importHistory(c, t);
    const env = { RECONCILE_ACTIVE_INTERVAL_SECONDS: "60" };
    // Refunds of orders from the last 12 hours: a refund below the catch-up's horizon is the full pass's.
    const traffic = c.sandbox.startTraffic({ eventsPerSecond: 2, refundsWithinMs: 12 * 3_600_000 });
    try {
      let service: Service = await startService(c, t, env);
      await sleep(30_000);
      await service.stop();
      c.sandbox.removeWebhooks();
      const down = Date.now();
      log(`sync outage (${opts.historyOrders} orders): every process down for ${opts.outageSeconds} s`);
      await sleep((opts.outageSeconds * 1000) / 2);
      // Besides the traffic: what only a read deep in the history shows (no webhook ever tells of them).
      const deep = deepChanges(c);
      await sleep((opts.outageSeconds * 1000) / 2);
      const up = Date.now();
      const made = [...traffic.changes, ...deep];
      const changed = changedDuring(c, made, down, up);
      const from = c.sandbox.requestLog.length;
      service = await startService(c, t, env);
      try {
        const wrong = async () => Object.values(await stillWrong(c, service, changed)).reduce((a, b) => a + b, 0);
        let ordersRightAt: number | undefined;
        let ordersRightCall: number | undefined;
        const right = await waitFor(
          async () => {
            const byKind = await stillWrong(c, service, changed);
            if (byKind.orders === 0 && ordersRightAt === undefined) {
              ordersRightAt = Date.now();
              ordersRightCall = c.sandbox.requestLog.length;
            }
            return Object.values(byKind).every((n) => n === 0);
          },
          { timeoutMs: 600_000, intervalMs: 500 },
        ).then(
          () => true,
          () => false,
        );
        const secondsToRight = right ? (Date.now() - up) / 1000 : null;
        const calls = c.calls(from);
        const callsByRead = [...c.callsByRead(from)].sort((a, b) => b[1] - a[1]);
        const firstCall = c.sandbox.requestLog[from];
        return {
          firstCallSeconds: firstCall ? (firstCall.at - up) / 1000 : null,
          callsByReadUntilOrdersRight: [...c.callsByRead(from, ordersRightCall)].sort((a, b) => b[1] - a[1]),
          historyOrders: opts.historyOrders,
          outageSeconds: opts.outageSeconds,
          changedRecords: changed.length,
          changesByType: countByType(made, down, up),
          secondsToRight,
          ordersSecondsToRight: ordersRightAt === undefined ? null : (ordersRightAt - up) / 1000,
          calls: calls.count,
          callsByRead,
          stillWrong: right ? 0 : await wrong(),
          rateLimited: calls.rateLimited,
        };
      } finally {
        await service.stop();
      }
    } finally {
      traffic.stop();
    }
  } finally {
    await c.close();
  }
}

/** Old orders refunded, and the imported history's open orders moved on, in an outage (besides the traffic). */
const DEEP_CHANGES = { oldRefunds: 12, openMoves: 12 };

/**
 * What the traffic never does and a catch-up must still find: refunds of paid orders finished
 * anywhere in the history (older than a day, spread over it), and the history's own open orders
 * (the oldest first) moved one step on, a READY one to DELIVERED, one of them cancelled.
 */
function deepChanges(c: Company): TrafficChange[] {
  const made: TrafficChange[] = [];
  const note = (type: string, o: { id: string; restaurantId: string; status: string }) =>
    made.push({ at: Date.now(), type, id: o.id, restaurantId: o.restaurantId, status: o.status, missed: true });
  const orders = c.sandbox.state.orders();
  const dayAgo = Date.now() - 86_400_000;
  const old = orders.filter((o) => o.status === "DELIVERED" && o.paidAt && Date.parse(o.createdAt) < dayAgo);
  for (let i = 0; i < DEEP_CHANGES.oldRefunds && old.length > 0; i++) {
    const o = old[Math.floor(((i + 0.5) * old.length) / DEEP_CHANGES.oldRefunds)];
    if (o) note("order.refunded (old order)", c.sandbox.actions.refundOrder(o.id, "bench: refund of an old order"));
  }
  const open = orders
    .filter((o) => OPEN_ORDER_STATUSES.includes(o.status) && Date.parse(o.createdAt) < Date.now() - 600_000)
    .sort((a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt))
    .slice(0, DEEP_CHANGES.openMoves);
  open.forEach((o, i) => {
    const next = i === 0 ? "CANCELLED" : nextStatus(o.status);
    if (next) note(`order → ${next} (open before)`, c.sandbox.actions.updateOrderStatus(o.id, next));
  });
  return made;
}

/** A record changed during the outage, and how many states it had had by the restart. */
interface ChangedRecord {
  kind: "orders" | "bookings" | "menu-items";
  id: string;
  statesAtRestart: number;
}

/** The records the traffic changed between `from` and `to`, once each. */
function changedDuring(c: Company, changes: TrafficChange[], from: number, to: number): ChangedRecord[] {
  const byId = new Map<string, ChangedRecord>();
  for (const ch of changes) {
    if (ch.at < from || ch.at > to) continue;
    const kind = ch.type.startsWith("order") ? "orders" : ch.type.startsWith("booking.") ? "bookings" : "menu-items";
    byId.set(ch.id, { kind, id: ch.id, statesAtRestart: c.sandbox.state.history(ch.id).length });
  }
  return [...byId.values()];
}

function countByType(changes: TrafficChange[], from: number, to: number): Record<string, number> {
  const by: Record<string, number> = {};
  for (const ch of changes) {
    if (ch.at < from || ch.at > to) continue;
    const type = ch.type === "order.status_changed" ? `order → ${ch.status ?? "?"}` : ch.type;
    by[type] = (by[type] ?? 0) + 1;
  }
  return by;
}

/** What must match between the upstream's current record and the mirror's copy. */
const FIELDS: Record<ChangedRecord["kind"], string[]> = {
  orders: ["status", "refundedAt"],
  bookings: ["status", "date", "time"],
  "menu-items": ["price", "stock"],
};

/**
 * How many of `records` the mirror still holds wrong, by kind: right is the state the record had at the
 * restart, or any later one (live traffic goes on after the restart, and its webhooks are not the
 * catch-up's job to wait for).
 */
async function stillWrong(c: Company, service: Service, records: ChangedRecord[]): Promise<Record<ChangedRecord["kind"], number>> {
  const wrong = { orders: 0, bookings: 0, "menu-items": 0 };
  for (const r of records) {
    const states = c.sandbox.state.history(r.id).slice(r.statesAtRestart - 1) as Record<string, unknown>[];
    const mirror = (await service.mirror.get(r.kind, r.id)) as Record<string, unknown> | undefined;
    const same = (s: Record<string, unknown>) =>
      FIELDS[r.kind].every((f) => JSON.stringify(mirror?.[f] ?? null) === JSON.stringify(s[f] ?? null));
    if (!mirror || !states.some(same)) wrong[r.kind]++;
  }
  return wrong;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface GapsBenchResult {
  /** The backfill with nothing else running (the target's row). */
  firstDayQuiet: FirstDayResult;
  /** The same with 1 event/s of live traffic: the webhooks' freshness meanwhile, and what they cost the backfill. */
  firstDay: FirstDayResult;
  outages: OutageResult[];
  seconds: number;
}

/** The first day twice, one at a time: with nothing else running (the target), then with 1 event/s of live traffic. */
export async function benchFirstDays(
  t: SyncBenchTargets,
  log: (s: string) => void,
): Promise<[quiet: FirstDayResult, live: FirstDayResult]> {
  const quiet = await benchFirstDay(t, 20_000, 0, log);
  return [quiet, await benchFirstDay(t, 20_000, 1, log)];
}

/**
 * `npm run bench -- --only sync-gaps`: the first day at 20,000 orders (with nothing else running,
 * then with 1 event/s of live traffic), then a 2-minute outage at 20,000 and at 100,000 orders of
 * history (30 days each). One at a time: each is bound by its own sandbox's budget, but their CPU
 * would bend the others' seconds.
 */
export async function benchGaps(t: SyncBenchTargets & { log: (s: string) => void }): Promise<GapsBenchResult> {
  const started = performance.now();
  const [firstDayQuiet, firstDay] = await benchFirstDays(t, t.log);
  const outages: OutageResult[] = [];
  for (const [historyOrders, seed] of [
    [20_000, 28],
    [100_000, 29],
  ] as const)
    outages.push(await benchOutage(t, { historyOrders, outageSeconds: 120, seed }, t.log));
  return { firstDayQuiet, firstDay, outages, seconds: (performance.now() - started) / 1000 };
}

const fmt = (n: number, digits = 0) =>
  Number.isFinite(n) ? n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }) : "—";

/** The first day's paragraph in Markdown; `byRead` adds where its calls went. */
export function firstDayReport(d: FirstDayResult, byRead = false): string[] {
  const backfill = `\`svc-webhooks backfill\` of ${fmt(d.records)} records (${fmt(d.historyOrders)} orders, bookings, menu items) took ${fmt(d.seconds, 1)} s: **${fmt(d.recordsPerMinute)} records/min, ${fmt(d.ofPhysicalLimit, 2)} of the physical limit**; ${fmt(d.callsPerMinute)} calls/min, ${d.rateLimited} 429s, ${fmt(d.orderListCalls)} calls to the company's order list (one walk is ${fmt(Math.ceil(d.historyOrders / 100))} pages).`;
  const head =
    d.eventsPerSecond === 0
      ? `**First day, nothing else running**: the service over an empty mirror (reconciliation at its defaults), no live traffic; ${backfill} (target ≥ 0.8)`
      : `**First day with live traffic**: the same while ${d.eventsPerSecond} event/s of live traffic arrives; ${backfill} Webhooks meanwhile: ${fmt(d.liveChanges)} changes, **p99 ${fmt(d.liveP99, 1)} s** (max ${fmt(d.liveMax, 1)} s), ${d.liveLost} lost (target p99 ≤ 10 s).`;
  return [
    head,
    ...(byRead ? ["", `Calls during the backfill by read: ${d.callsByRead.map(([read, n]) => `${read} ${n}`).join("; ")}.`] : []),
  ];
}

/** The gaps part's tables in Markdown (bench/results and the docs' sync-gaps section). */
export function gapsReport(r: GapsBenchResult): string[] {
  return [
    `Where the mirror may be wrong: sandbox at 120 calls/min, 40 restaurants, histories of 30 days ending now (whole run ${fmt(r.seconds / 60, 1)} min). Physical limit: 120 calls × 100 records = ${fmt(PHYSICAL_RECORDS_PER_MINUTE)} records/min.`,
    "",
    ...firstDayReport(r.firstDayQuiet),
    "",
    ...firstDayReport(r.firstDay, true),
    "",
    ...outageReport(r.outages),
  ];
}

/** The outage rows' table and their changes, in Markdown. */
export function outageReport(outages: OutageResult[]): string[] {
  const seconds = (s: number | null) => (s === null ? "not within 600 s" : `${fmt(s, 1)} s`);
  return [
    "| outage (every process down, upstream going on, no webhook) | history | records changed meanwhile | restart → orders right again | restart → mirror right again | API calls until then | 429s | target (orders) |",
    "|---|---:|---:|---:|---:|---:|---:|---|",
    ...outages.map(
      (o) =>
        `| ${fmt(o.outageSeconds / 60, 0)} min | ${fmt(o.historyOrders)} orders | ${fmt(o.changedRecords)} | **${seconds(o.ordersSecondsToRight)}** | ${
          o.secondsToRight === null ? `**not within 600 s** (${o.stillWrong} still wrong)` : `**${fmt(o.secondsToRight, 1)} s**`
        } | ${fmt(o.calls)} | ${o.rateLimited} | ≤ 30 s |`,
    ),
    "",
    ...outages.map(
      (o) =>
        `Calls from the restart at ${fmt(o.historyOrders)} orders by read: ${o.callsByRead.map(([read, n]) => `${read} ${n}`).join("; ")}.`,
    ),
    "",
    ...outages.map(
      (o) =>
        `Where the seconds to orders right went at ${fmt(o.historyOrders)} orders: the first API call ${o.firstCallSeconds === null ? "never" : `${fmt(o.firstCallSeconds, 1)} s`} after the restart (the service starting, the gap found, the catch-up queued); then ${o.callsByReadUntilOrdersRight.reduce((n, [, k]) => n + k, 0)} calls until the orders were right: ${o.callsByReadUntilOrdersRight.map(([read, n]) => `${read} ${n}`).join("; ")}.`,
    ),
    "",
    ...outages.map(
      (o) =>
        `Changes during the outage at ${fmt(o.historyOrders)} orders (2 events/s; the traffic's refunds of orders of the last 12 hours, plus ${DEEP_CHANGES.oldRefunds} refunds of orders older than a day spread over the history and ${DEEP_CHANGES.openMoves} of the history's open orders moved on): ${Object.entries(
          o.changesByType,
        )
          .sort((a, b) => b[1] - a[1])
          .map(([type, n]) => `${type} ${n}`)
          .join(", ")}.`,
    ),
  ];
}

export const GAPS_RUNS_HEADER = [
  "# Sync gaps runs",
  "",
  "Every `npm run bench -- --only sync-gaps` (and `--only sync`) appends its headline figures here (bench/sync-gaps.ts). Targets (issue 32): a first-day backfill with nothing else running at ≥ 0.8 of the physical limit, and webhooks arriving during a backfill p99 ≤ 10 s; after a 2-minute outage the mirror right again within 60 s of the restart at 20,000 orders, within 120 s at 100,000.",
  "",
  "| run (UTC) | commit | first day with 1 event/s: records/min (of limit) | webhooks p99 meanwhile | outage 20,000: s (calls) | outage 100,000: s (calls) | 429 | first day, nothing else running: records/min (of limit) |",
  "|---|---|---|---|---|---|---:|---|",
];

/** One line of bench/results/sync-gaps-runs.md. */
export function gapsRunLine(r: GapsBenchResult, at: string, commit: string): string {
  const d = r.firstDay;
  const outage = (o: OutageResult | undefined) =>
    !o
      ? "—"
      : o.secondsToRight === null
        ? `not right (${o.stillWrong} wrong) (${fmt(o.calls)})`
        : `${fmt(o.secondsToRight, 1)} (${fmt(o.calls)})`;
  const q = r.firstDayQuiet;
  const limited = q.rateLimited + d.rateLimited + r.outages.reduce((n, o) => n + o.rateLimited, 0);
  return `| ${at.slice(0, 16).replace("T", " ")} | ${commit} | ${fmt(d.recordsPerMinute)} (${fmt(d.ofPhysicalLimit, 2)}) | ${fmt(d.liveP99, 1)} s | ${outage(r.outages[0])} | ${outage(r.outages[1])} | ${limited} | ${fmt(q.recordsPerMinute)} (${fmt(q.ofPhysicalLimit, 2)}) |`;
}
