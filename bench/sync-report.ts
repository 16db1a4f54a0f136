import type { FreshnessResult, SyncBenchResult, TrafficFullPass } from "./sync.js";

/** `--only sync-full`: a full pass over a large history while live traffic runs. */
export function syncFullReport(r: { freshness: FreshnessResult; fullPass?: TrafficFullPass }): string[] {
  const f = r.freshness;
  const p = r.fullPass;
  return [
    `Full pass under live traffic: sandbox at 120 calls/min, 40 restaurants, ${fmt(f.historyOrders)} orders of history imported, then reconciliation at its defaults (its full pass due at start) while ${fmt(f.eventsPerSecond, 1)} events/s of live traffic run for ${fmt(f.seconds / 60, 1)} min.`,
    "",
    p
      ? `Full pass: **${p.completed ? "completed" : "not complete"}** after ${fmt(p.seconds / 60, 1)} min: ${fmt(p.records)} records in ${fmt(p.pages)} pages (${fmt(p.pages / (p.seconds / 60), 1)} calls/min; ${fmt(secondsPer10k(p), 1)} s per 10,000 records).`
      : "Full pass: not measured.",
    "",
    `Meanwhile, change → change event **p50 ${fmt(f.p50, 1)} s, p90 ${fmt(f.p90, 1)} s, p99 ${fmt(f.p99, 1)} s** (max ${fmt(f.max, 1)} s); ${fmt(f.changes)} changes, **${f.lost} lost**, ${f.rateLimited} 429s, ${fmt(f.callsPerMinute)} calls/min (${Object.entries(
      f.callsPerMinuteByClass,
    )
      .map(([c, n]) => `${c} ${fmt(n, 1)}`)
      .join(", ")}).`,
  ];
}

/** One line of bench/results/sync-runs.md: every run's headline figures, so runs far apart compare. */
export function syncRunLine(r: SyncBenchResult, at: string, commit: string): string {
  const f = r.freshness;
  const [small, large] = r.cost;
  const missed =
    r.missed.reachedAfterSeconds === null ? "not caught" : `${fmt(r.missed.reachedAfterSeconds, 1)} s (${r.missed.source ?? "?"})`;
  return `| ${runAt(at)} | ${commit} | ${fmt(small?.callsPerEvent ?? NaN, 2)} → ${fmt(large?.callsPerEvent ?? NaN, 2)} (×${fmt(r.costRatio, 2)}) | ${freshnessCell(f)} | ${f.lost} of ${fmt(f.changes)} | ${f.rateLimited} | ${fmt(f.callsPerMinute)} | ${missed} | ${fmt(r.fullPass.secondsPer10k, 1)} s |`;
}

/** One line of bench/results/sync-full-runs.md: a full pass's headline figures, every run kept. */
export function syncFullRunLine(r: { freshness: FreshnessResult; fullPass?: TrafficFullPass }, at: string, commit: string): string {
  const f = r.freshness;
  const p = r.fullPass;
  const pass = p
    ? `${p.completed ? "completed" : "not complete"} after ${fmt(p.seconds / 60, 1)} min, ${fmt(p.records)} records | ${fmt(secondsPer10k(p), 1)} s`
    : "not measured | —";
  return `| ${runAt(at)} | ${commit} | ${pass} | ${freshnessCell(f)} | ${f.lost} of ${fmt(f.changes)} | ${f.rateLimited} | ${fmt(f.callsPerMinute)} |`;
}

export const SYNC_FULL_RUNS_HEADER = [
  "# Sync full-pass runs",
  "",
  "Every `npm run bench -- --only sync-full` appends its headline figures here (bench/sync-report.ts). Targets (issue 22): the pass over 100,000 orders of history completes while webhooks stay fresh (p99 ≤ 10 s, none lost, no 429).",
  "",
  "| run (UTC) | commit | full pass | per 10,000 records | freshness p50 / p90 / p99 (max) | lost | 429 | calls/min |",
  "|---|---|---|---:|---|---|---|---:|",
];

export const SYNC_RUNS_HEADER = [
  "# Sync bench runs",
  "",
  "Every `npm run bench -- --only sync` appends its headline figures here (bench/sync-report.ts), so two runs far apart compare. Targets (issue 22): calls per event ≤ 1.0 at 20,000 and ≤ ×2; p99 ≤ 10 s; none lost; no 429; the missed change caught within the active interval (60 s in the bench) as `reconcile`.",
  "",
  "| run (UTC) | commit | calls/event 400 → 20,000 | freshness p50 / p90 / p99 (max) | lost | 429 | calls/min | missed change on an active order | full pass per 10,000 |",
  "|---|---|---|---|---|---|---:|---|---:|",
];

const fmt = (n: number, digits = 0) =>
  Number.isFinite(n) ? n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }) : "—";
/** A run's start as the runs' tables show it: "2026-11-24 21:58" (UTC). */
const runAt = (at: string) => at.slice(0, 16).replace("T", " ");
/** Freshness in a runs' table cell: p50 / p90 / p99 (max). */
const freshnessCell = (f: FreshnessResult) => `${fmt(f.p50, 1)} / ${fmt(f.p90, 1)} / ${fmt(f.p99, 1)} s (${fmt(f.max, 1)})`;
const secondsPer10k = (p: TrafficFullPass) => (p.seconds / Math.max(1, p.records)) * 10_000;

/** The sync part's tables in Markdown (bench/results/latest.md and the README's sync section). */
export function syncReport(r: SyncBenchResult): string[] {
  const [small, large] = r.cost;
  const f = r.freshness;
  const m = r.missed;
  const naiveCallsPerMinute = f.eventsPerSecond * 60;
  return [
    `Sync at a company's size: sandbox at 120 calls/min, 40 restaurants, histories ending now; the webhook edge and the worker in separate processes, sharing one budget in Redis (whole run ${fmt(r.seconds / 60, 1)} min).`,
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
    `Freshness under live traffic (${fmt(f.historyOrders)} orders of history, ${fmt(f.eventsPerSecond, 1)} events/s for ${fmt(f.seconds)} s: new orders through the kitchen, refunds of old orders, bookings, menu edits; reconciliation at its defaults): change → the service's change event **p50 ${fmt(f.p50, 1)} s, p90 ${fmt(f.p90, 1)} s, p99 ${fmt(f.p99, 1)} s** (max ${fmt(f.max, 1)} s); ${fmt(f.changes)} changes, **${f.lost} lost**, ${f.rateLimited} 429s, ${fmt(f.callsPerMinute)} calls/min (targets: none lost, p99 ≤ 10 s, no 429). Naive (one call per event): ${fmt(naiveCallsPerMinute)} calls/min, ${fmt(naiveCallsPerMinute / 120, 1)}× the budget, so its backlog grows without bound.`,
    "",
    `Where the live window's calls went, by budget class: ${Object.entries(f.callsPerMinuteByClass)
      .map(([c, n]) => `${c} ${fmt(n, 1)}/min`)
      .join(", ")}. By read (calls/min): ${f.callsPerMinuteByRead
      .slice(0, 8)
      .map(([read, n]) => `${read} ${fmt(n, 1)}`)
      .join("; ")}.`,
    "",
    `Freshness by change (p50 / p99, worst first): ${f.freshnessByChange
      .map(([type, v]) => `${type} ${fmt(v.p50, 1)} / ${fmt(v.p99, 1)} s (${v.changes})`)
      .join("; ")}.`,
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
