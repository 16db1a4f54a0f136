import type { MinuteSample } from "../../metrics/minute-samples.js";
import type { OpsSummary } from "../../metrics/metrics.js";
import { ago, duration } from "./layout.js";

/**
 * Every figure the health page shows, in one table: its label in plain words, its unit, and, for a
 * figure that can be bad, the rule that says ok, warn or bad and why. The page only lays the rows
 * out; a new figure is a row here.
 */

export type Level = "ok" | "warn" | "bad";

/**
 * The thresholds of deploy/prometheus/alerts.yml that the page shares, by alert name (the unit
 * test reads the alert rules and checks each number against its rule): a figure past one is bad.
 */
export const ALERT_THRESHOLDS = {
  /** Seconds the oldest accepted event waits for a worker. */
  SvcIngestLagHigh: 300,
  /** Events in the ingest backlog (a ticket when it keeps growing). */
  SvcIngestBacklogGrowing: 1000,
  /** Seconds since a mirror kind (reviews aside) took a write. */
  SvcMirrorStale: 3 * 3600,
  /** Changes the sweep found that no webhook announced, in an hour. */
  SvcMissedWebhooksRising: 10,
  /** Seconds without a complete full pass: three of the default RECONCILE_INTERVAL_SECONDS. */
  SvcReconciliationStalled: 3 * 3600,
} as const;

/** The service's own limits the rules scale with (from the config). */
export interface HealthLimits {
  /** MAX_BACKLOG: the edge answers 503 once the ingest backlog reaches it. */
  maxBacklog: number;
  /** RECONCILE_INTERVAL_SECONDS (0: no reconciliation is scheduled). */
  reconcileIntervalSeconds: number;
}

/** What the page is drawn from: the summary of this moment, the shared minute samples, the limits. */
export interface HealthView {
  summary: OpsSummary;
  samples: readonly MinuteSample[];
  limits: HealthLimits;
  now: Date;
}

/** A count of a noun; seconds as a duration; seconds ago; a moment (ms since the epoch) as "… ago"; 1 or 0 as up or down. */
type Unit = { noun: string } | "duration" | "age" | "since" | "up-down";

interface Rule {
  /** Why the thresholds are where they are (the state's tooltip). */
  reason(limits: HealthLimits): string;
  level(value: number, limits: HealthLimits, view: HealthView): Level;
}

export interface Figure {
  group: string;
  label: string;
  unit: Unit;
  /** null: not measured here (shown as "unknown", or what `missing` says). */
  value(view: HealthView): number | null;
  missing?: string;
  rule?: Rule;
}

/** The sum of a sampled series over the samples (the last hour), or null with no samples yet. */
export function sampledTotal(samples: readonly MinuteSample[], key: string): number | null {
  if (samples.length === 0) return null;
  return samples.reduce((n, s) => n + (s.values[key] ?? 0), 0);
}

const above = (warn: number, bad: number) => (v: number) => (v > bad ? "bad" : v > warn ? "warn" : "ok");
const sum = (values: readonly { value: number }[]) => values.reduce((n, v) => n + v.value, 0);
const A = ALERT_THRESHOLDS;
/** A reconciliation pass is late after this many intervals, stalled (the alert) after three. */
const LATE_INTERVALS = 2;
const STALLED_INTERVALS = 3;
const BACKLOG_FULL_SHARE = 0.9;

export const FIGURES: readonly Figure[] = [
  {
    group: "Ingest",
    label: "Events waiting for a worker",
    unit: { noun: "events" },
    value: (v) => v.summary.ingest.backlog,
    rule: {
      reason: (l) =>
        `Warning above ${count(A.SvcIngestBacklogGrowing)} (the backlog alert); bad from ${BACKLOG_FULL_SHARE * 100}% of MAX_BACKLOG (${count(l.maxBacklog)}), where the edge starts answering 503`,
      level: (v, l) => (v >= l.maxBacklog * BACKLOG_FULL_SHARE ? "bad" : v > A.SvcIngestBacklogGrowing ? "warn" : "ok"),
    },
  },
  {
    group: "Ingest",
    label: "Oldest waiting event",
    unit: "duration",
    value: (v) => v.summary.ingest.lagSeconds,
    rule: {
      reason: () => `Warning after a minute; bad after ${duration(A.SvcIngestLagHigh)} (the ingest lag alert): workers do not keep up`,
      level: above(60, A.SvcIngestLagHigh),
    },
  },
  {
    group: "Ingest",
    label: "Database (event log and mirror)",
    unit: "up-down",
    value: (v) => (v.summary.database.up === null ? null : v.summary.database.up ? 1 : 0),
    rule: {
      reason: () => "Bad when the database does not answer a ping: events wait until it is back",
      level: (v) => (v === 1 ? "ok" : "bad"),
    },
  },
  {
    group: "Deliveries, last hour (every worker)",
    label: "Events handled",
    unit: { noun: "events" },
    value: (v) => sampledTotal(v.samples, "delivered"),
    missing: "no samples yet",
  },
  {
    group: "Deliveries, last hour (every worker)",
    label: "Attempts failed, to be retried",
    unit: { noun: "attempts" },
    value: (v) => sampledTotal(v.samples, "retried"),
    missing: "no samples yet",
    rule: { reason: () => "Warning when handlers fail: the events are retried, then given up on", level: above(0, Infinity) },
  },
  {
    group: "Deliveries, last hour (every worker)",
    label: "Events failed for good",
    unit: { noun: "events" },
    value: (v) => sampledTotal(v.samples, "failed"),
    missing: "no samples yet",
    rule: { reason: () => "Bad when any event failed for good: it waits for a replay (the dead-letter alert)", level: above(0, 0) },
  },
  {
    group: "Deliveries, last hour (every worker)",
    label: "Dead letters waiting for a replay",
    unit: { noun: "jobs" },
    value: (v) => sum(v.summary.queues.map((q) => ({ value: q.counts.failed ?? 0 }))),
    rule: { reason: () => "Bad when any job failed for good: look at it and replay it (Failures page)", level: above(0, 0) },
  },
  {
    group: "Reconciliation",
    label: "Last complete full reconciliation pass",
    unit: "since",
    value: (v) => (v.summary.reconciliation.lastSuccessAt ? Date.parse(v.summary.reconciliation.lastSuccessAt) : null),
    missing: "not scheduled here",
    rule: {
      reason: (l) =>
        `Warning after ${LATE_INTERVALS} reconciliation intervals (${duration(LATE_INTERVALS * l.reconcileIntervalSeconds)}); bad after ${STALLED_INTERVALS} (${duration(STALLED_INTERVALS * l.reconcileIntervalSeconds)}, the stalled alert)`,
      level: (at, l, view) => {
        const age = (view.now.getTime() - at) / 1000;
        if (l.reconcileIntervalSeconds === 0) return "ok";
        return age > STALLED_INTERVALS * l.reconcileIntervalSeconds
          ? "bad"
          : age > LATE_INTERVALS * l.reconcileIntervalSeconds
            ? "warn"
            : "ok";
      },
    },
  },
  {
    group: "Reconciliation",
    label: "Missed webhooks found, last hour",
    unit: { noun: "changes" },
    value: (v) => sampledTotal(v.samples, "missed"),
    missing: "no samples yet",
    rule: {
      reason: () =>
        `Warning when reconciliation finds a change no webhook announced; bad above ${A.SvcMissedWebhooksRising} an hour (the missed-webhooks alert)`,
      level: above(0, A.SvcMissedWebhooksRising),
    },
  },
  {
    group: "Reconciliation",
    label: "Full reconciliation pass: records read",
    unit: { noun: "records" },
    value: (v) => progressTotal(v.summary, "svc_reconcile_full_pass_records"),
    missing: "no pass in this process",
  },
  {
    group: "API budget",
    label: "Requests left in this window",
    unit: { noun: "requests" },
    value: (v) => v.summary.rateBudget?.left ?? null,
    missing: "no upstream client in this process",
    rule: {
      reason: () => "Warning when the shared budget is spent: refreshes and sweeps wait (the budget alert)",
      level: (v) => (v < 1 ? "warn" : "ok"),
    },
  },
  {
    group: "API budget",
    label: "Retry-After pause left",
    unit: "duration",
    value: (v) => v.summary.rateBudget?.pausedSeconds ?? null,
    missing: "no upstream client in this process",
    rule: { reason: () => "Warning while the API asked every caller to pause", level: above(0, Infinity) },
  },
  {
    group: "API budget",
    label: "429 answers from the API, last hour",
    unit: { noun: "answers" },
    value: (v) => sampledTotal(v.samples, "rateLimited"),
    missing: "no samples yet",
    rule: {
      reason: () =>
        "Warning on any 429: the budget is set above the API's limit, or another client shares the key (the rate-limited alert)",
      level: above(0, Infinity),
    },
  },
];

/** The mirror's freshness, a figure per kind (reviews arrive only by webhook and may be quiet: no rule, as in the alert). */
export function freshnessFigure(kind: string): Figure {
  return {
    group: "Mirror freshness",
    label: `Last write to ${kind}`,
    unit: "age",
    value: (v) => v.summary.freshness.find((f) => f.kind === kind)?.lastWriteAgeSeconds ?? null,
    missing: "never written",
    ...(kind === "reviews"
      ? {}
      : {
          rule: {
            reason: () => `Warning after ${duration(A.SvcMirrorStale)} without a write (the mirror-stale alert)`,
            level: above(A.SvcMirrorStale, Infinity),
          },
        }),
  };
}

/** The reconciliation and sync progress gauges, in words, with the label each is split by. */
export const PROGRESS_LABELS: Readonly<Record<string, { label: string; noun: string; by: string }>> = {
  svc_reconcile_full_pass_records: { label: "Full reconciliation pass: records read", noun: "records", by: "kind" },
  svc_reconcile_full_pass_pages: { label: "Full reconciliation pass: pages read", noun: "pages", by: "kind" },
  svc_reconcile_last_complete_pass_timestamp_seconds: { label: "Last complete pass", noun: "", by: "tier" },
  svc_sync_unlisted_total: { label: "Ids the API never listed (since start)", noun: "ids", by: "kind" },
  svc_sync_refresh_reads_total: { label: "Refresh list reads (since start)", noun: "reads", by: "kind" },
};

function progressTotal(summary: OpsSummary, name: string): number | null {
  const metric = summary.reconciliation.progress.find((m) => m.name === name);
  return metric && metric.values.length > 0 ? sum(metric.values) : null;
}

const NUMBER = new Intl.NumberFormat("en-US", { maximumFractionDigits: 1 });
/** 12,345 */
export const count = (n: number) => NUMBER.format(n);

/** A figure as the page shows it: its text, an ISO time for a moment, its level and the rule's reason. */
export interface ShownFigure {
  figure: Figure;
  text: string;
  /** The ISO 8601 time behind a "… ago" text. */
  at?: string;
  level?: Level;
  reason?: string;
}

export function showFigure(figure: Figure, view: HealthView): ShownFigure {
  const value = figure.value(view);
  if (value === null) return { figure, text: figure.missing ?? "unknown" };
  const shown: ShownFigure = { figure, text: formatValue(figure.unit, value, view.now) };
  if (figure.unit === "since") shown.at = new Date(value).toISOString();
  if (figure.rule) {
    shown.level = figure.rule.level(value, view.limits, view);
    shown.reason = figure.rule.reason(view.limits);
  }
  return shown;
}

function formatValue(unit: Unit, value: number, now: Date): string {
  if (unit === "duration") return duration(value);
  if (unit === "age") return `${duration(value)} ago`;
  if (unit === "since") return ago(new Date(value), now);
  if (unit === "up-down") return value === 1 ? "up" : "down";
  return `${count(value)} ${unit.noun}`;
}
