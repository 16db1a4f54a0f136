import type { SyncBenchResult } from "./sync.js";

const fmt = (n: number, digits = 0) =>
  Number.isFinite(n) ? n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }) : "—";

/** The sync part's tables in Markdown (bench/results/latest.md and the README's sync section). */
export function syncReport(r: SyncBenchResult): string[] {
  const [small, large] = r.cost;
  const f = r.freshness;
  const m = r.missed;
  const naiveCallsPerMinute = f.eventsPerSecond * 60;
  return [
    `Sync at a company's size: sandbox at 120 calls/min, 40 restaurants, histories ending now (whole run ${fmt(r.seconds / 60, 1)} min).`,
    "",
    "| API calls per event (~30 order events: new orders moved on, refunds of old orders; reconciliation off) | history | events | API calls | calls per event | 429s | mirror holds them after | naive: calls per event |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
    ...r.cost.map(
      (c) =>
        `| ${fmt(c.historyOrders)} orders | ${fmt(c.historyOrders)} | ${c.events} | ${c.apiCalls} | ${fmt(c.callsPerEvent, 2)} | ${c.rateLimited} | ${fmt(c.secondsToMirror, 1)} s | 1.00 |`,
    ),
    "",
    `**Calls per event, ${fmt(large?.historyOrders ?? NaN)} ÷ ${fmt(small?.historyOrders ?? NaN)} orders of history: ×${fmt(r.costRatio, 2)}** (target: ≤ 1.0 per event at 20,000 and ≤ ×2).`,
    "",
    `Freshness under live traffic (${fmt(f.historyOrders)} orders of history, ${fmt(f.eventsPerSecond, 1)} events/s for ${f.seconds} s: new orders through the kitchen, refunds of old orders, bookings, menu edits; reconciliation at its defaults): change → the service's change event **p50 ${fmt(f.p50, 1)} s, p90 ${fmt(f.p90, 1)} s, p99 ${fmt(f.p99, 1)} s** (max ${fmt(f.max, 1)} s); ${fmt(f.changes)} changes, **${f.lost} lost**, ${f.rateLimited} 429s, ${fmt(f.callsPerMinute)} calls/min (targets: none lost, p99 ≤ 10 s, no 429). Naive (one call per event): ${fmt(naiveCallsPerMinute)} calls/min, ${fmt(naiveCallsPerMinute / 120, 1)}× the budget, so its backlog grows without bound.`,
    "",
    `Missed webhook (an active order moved on upstream, its webhook never sent; \`RECONCILE_ACTIVE_INTERVAL_SECONDS=60\`): ${
      m.reachedAfterSeconds === null
        ? `**not in the mirror after ${m.waitedSeconds} s**`
        : `**in the mirror after ${fmt(m.reachedAfterSeconds, 1)} s** (source \`${m.source ?? "?"}\`)`
    } (target: within the active interval, source \`reconcile\`).`,
    "",
    `Full pass: \`svc-webhooks backfill\` of ${fmt(r.fullPass.records)} records (orders, bookings, menu items) at the real budget: ${fmt(r.fullPass.seconds, 1)} s, **${fmt(r.fullPass.secondsPer10k, 1)} s per 10,000 records** (${fmt(r.fullPass.callsPerMinute)} calls/min).`,
  ];
}
