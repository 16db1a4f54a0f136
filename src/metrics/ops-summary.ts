import type { Metrics } from "./metrics.js";

/** One labelled value of a metric. */
export interface SummaryValue {
  labels: Record<string, string>;
  value: number;
}

/** What an operator asks first, gathered from the service's own gauges at one moment (the console's health page, GET /console/health.json). */
export interface OpsSummary {
  at: string;
  /** Seconds since each mirror kind last took a write; null for a kind never written. */
  freshness: { kind: string; lastWriteAgeSeconds: number | null }[];
  /** The shared upstream budget (the limiter's state at collection); null where this process runs no upstream client. */
  rateBudget: { max: number; used: number; left: number; pausedSeconds: number } | null;
  /** Events accepted that no worker finished with, and the age of the oldest. */
  ingest: { backlog: number | null; lagSeconds: number | null };
  /** Changes the reconciliation sweep found that no webhook announced, by kind, since this process started. */
  missedWebhooks: SummaryValue[];
  reconciliation: {
    /** When the last sweep finished (ISO 8601); null where none is scheduled. */
    lastSuccessAt: string | null;
    /** Every other reconciliation/sync progress gauge the service exports (svc_reconcile_*, svc_sync_*), as exported. */
    progress: { name: string; help: string; values: SummaryValue[] }[];
  };
  /** Jobs per queue by state (failed: given up on; delayed: waiting for a retry). */
  queues: { queue: string; counts: Record<string, number> }[];
  database: { up: boolean | null };
}

const PROGRESS = /^svc_(reconcile|sync)_/;
const LAST_SUCCESS = "svc_reconcile_last_success_timestamp_seconds";

type MetricJson = Awaited<ReturnType<Metrics["registry"]["getMetricsAsJSON"]>>[number];

const valuesOf = (m: MetricJson | undefined): SummaryValue[] =>
  (m?.values ?? []).map((v) => ({ labels: Object.fromEntries(Object.entries(v.labels).map(([k, l]) => [k, String(l)])), value: v.value }));
const single = (m: MetricJson | undefined): number | null => valuesOf(m)[0]?.value ?? null;

/**
 * Runs the scrape-time collectors, then reads the summary off the metrics registry: the console
 * and scripts see the same numbers Prometheus does, gathered by one function.
 */
export async function collectOpsSummary(
  metrics: Metrics,
  options: { kinds: readonly string[]; rateMax?: number | undefined },
): Promise<OpsSummary> {
  await metrics.render();
  const all = await metrics.registry.getMetricsAsJSON();
  const byName = new Map(all.map((m) => [m.name, m]));
  const get = (name: string) => byName.get(name);
  const lag = new Map(valuesOf(get("svc_mirror_last_write_age_seconds")).map((v) => [v.labels.kind, v.value]));
  const remaining = single(get("svc_upstream_rate_budget_remaining"));
  const lastSuccess = single(get(LAST_SUCCESS));
  const queues = new Map<string, Record<string, number>>();
  for (const v of valuesOf(get("svc_queue_jobs"))) {
    const queue = v.labels.queue ?? "";
    queues.set(queue, { ...queues.get(queue), [v.labels.state ?? ""]: v.value });
  }
  const database = single(get("svc_database_up"));
  return {
    at: new Date().toISOString(),
    freshness: options.kinds.map((kind) => ({ kind, lastWriteAgeSeconds: lag.get(kind) ?? null })),
    rateBudget:
      options.rateMax === undefined || remaining === null
        ? null
        : {
            max: options.rateMax,
            left: remaining,
            used: Math.max(0, options.rateMax - remaining),
            pausedSeconds: single(get("svc_upstream_pause_seconds")) ?? 0,
          },
    ingest: { backlog: single(get("svc_ingest_backlog_events")), lagSeconds: single(get("svc_ingest_lag_seconds")) },
    missedWebhooks: valuesOf(get("svc_missed_webhooks_total")),
    reconciliation: {
      lastSuccessAt: lastSuccess ? new Date(lastSuccess * 1000).toISOString() : null,
      progress: all
        .filter((m) => PROGRESS.test(m.name) && m.name !== LAST_SUCCESS)
        .map((m) => ({ name: m.name, help: m.help, values: valuesOf(m) })),
    },
    queues: [...queues].map(([queue, counts]) => ({ queue, counts })),
    database: { up: database === null ? null : database === 1 },
  };
}
