import type { Queue } from "bullmq";
import { Registry, Counter, Histogram, Gauge } from "prom-client";
import { withTimeout } from "../base/deadline.js";

/**
 * The service's Prometheus metrics, on a registry of its own (never prom-client's global one), so
 * several instances in one process do not collide. Gauges that reflect Redis state are filled by
 * collectors at scrape time (see `addCollector`). Each area's metrics are defined in a function of its own below.
 */
export function createMetrics() {
  const registry = new Registry();
  const collectors: (() => Promise<void>)[] = [];
  const make = makers(registry);

  return {
    registry,
    ...edgeMetrics(make),
    ...eventMetrics(make),
    ...upstreamMetrics(make),
    ...syncMetrics(make),
    ...processMetrics(make),
    /** Runs `collect` before each scrape; a failing collector leaves its gauges as they were. */
    addCollector(collect: () => Promise<void>) {
      collectors.push(collect);
    },
    async render(): Promise<{ contentType: string; body: string }> {
      // A failed collector is skipped: the scrape still answers, with that collector's gauges unchanged.
      await Promise.all(collectors.map((c) => c().catch(() => undefined)));
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

/** The metric constructors on `registry`: a metric is its name, help text, label names (and a histogram's buckets). */
function makers(registry: Registry) {
  const opts = { registers: [registry] };
  return {
    counter: <L extends string = string>(name: string, help: string, labelNames: readonly L[] = []) =>
      new Counter<L>({ name, help, labelNames, ...opts }),
    gauge: <L extends string = string>(name: string, help: string, labelNames: readonly L[] = []) =>
      new Gauge<L>({ name, help, labelNames, ...opts }),
    histogram: <L extends string = string>(name: string, help: string, labelNames: readonly L[], buckets: number[]) =>
      new Histogram<L>({ name, help, labelNames, buckets, ...opts }),
  };
}

type Makers = ReturnType<typeof makers>;

/**
 * The edge's metrics: deliveries accepted, deduplicated and refused, how fast Redis took them, and 5xx answers.
 * Names, help texts and labels are what docs/ and the alert rules in deploy/prometheus read.
 */
const edgeMetrics = ({ counter, histogram }: Makers) => ({
  eventsReceived: counter(
    "svc_webhook_events_received_total",
    "Events accepted (200), by type and by the index of the signing secret that matched",
    ["type", "secret"],
  ),
  eventsDeduplicated: counter(
    "svc_webhook_events_deduplicated_total",
    "Accepted redeliveries of an event id already seen within the window",
    ["type"],
  ),
  eventsRejected: counter("svc_webhook_events_rejected_total", "Deliveries refused, by reason", ["reason"]),
  enqueueSeconds: histogram(
    "svc_webhook_enqueue_seconds",
    "Time for Redis to acknowledge an event",
    [],
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  ),
  httpServerErrors: counter(
    "svc_http_server_errors_total",
    "Answers with a 5xx status (503: Redis away, backlog full or body budget spent), by status",
    ["status"],
  ),
});

/**
 * The delivery path's metrics: jobs and their queues, the ingest stream's backlog and what each worker holds of it.
 * Names, help texts and labels are what docs/ and the alert rules in deploy/prometheus read.
 */
const eventMetrics = ({ counter, gauge, histogram }: Makers) => ({
  jobs: counter("svc_jobs_total", "Jobs finished, by queue, job name (event type) and outcome", ["queue", "name", "outcome"]),
  jobSeconds: histogram(
    "svc_job_duration_seconds",
    "Time to run a job's handlers, by queue and job name",
    ["queue", "name"],
    [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60],
  ),
  queueDepth: gauge("svc_queue_jobs", "Jobs in each queue by state", ["queue", "state"]),
  streamBacklog: gauge(
    "svc_ingest_backlog_events",
    "Events accepted by the edge that no worker has finished with yet (unread, or read and unacknowledged)",
  ),
  consumerLag: gauge("svc_ingest_lag_seconds", "Age of the oldest event in the ingest stream (0 when none)"),
  eventsConsumed: counter("svc_ingest_consumed_total", "Events workers took from the ingest stream and settled"),
  eventsClaimed: counter("svc_ingest_claimed_total", "Events a stopped worker left unacknowledged, moved into the events queue by another"),
  eventsDropped: counter(
    "svc_events_dropped_total",
    "Events dropped unrun or unrecorded because their account was removed, or removed and added again, since they arrived",
  ),
  eventsRestored: counter(
    "svc_events_restored_total",
    "Events the event log held as waiting for a retry whose job Redis no longer held (it lost its data), enqueued again from the log",
  ),
  inflightEntries: gauge(
    "svc_ingest_inflight_entries",
    "Ingest stream entries this worker read and has not acknowledged yet (at most INGEST_BATCH_SIZE)",
  ),
  inflightBytes: gauge(
    "svc_ingest_inflight_bytes",
    "Bytes of the ingest stream entries this worker holds (at most WORKER_MAX_INFLIGHT_BYTES, or one entry)",
  ),
  attemptsWaitingOnLog: gauge(
    "svc_event_log_waiting_attempts",
    "Attempts handled from the ingest stream that wait for the event log to record them (the database is away or refuses writes)",
  ),
});

/**
 * This process's own metrics: the role it runs and whether its database answers.
 * Names, help texts and labels are what docs/ and the alert rules in deploy/prometheus read.
 */
const processMetrics = ({ gauge }: Makers) => ({
  role: gauge("svc_role_info", "1 for the role this process runs (all, web or worker): a worker that stops being scraped is absent", [
    "role",
  ]),
  databaseUp: gauge("svc_database_up", "1 when the database (mirror and event log) answered a ping at scrape time, else 0"),
  databasePingSeconds: gauge("svc_database_ping_seconds", "How long the database took to answer the scrape's ping"),
});

/**
 * The mirror's and the sync's metrics: changes, records refused, freshness, and the reconciliation tiers' progress.
 * Kept in this order: the health page lists the svc_reconcile_* and svc_sync_* gauges as registered.
 * Names, help texts and labels are what docs/ and the alert rules in deploy/prometheus read.
 */
const syncMetrics = ({ counter, gauge }: Makers) => ({
  mirrorChanges: counter(
    "svc_mirror_changes_total",
    "Change events recorded with mirror writes, by kind and source (webhook, reconcile, backfill)",
    ["kind", "source"],
  ),
  missedWebhooks: counter("svc_missed_webhooks_total", "Changes found by the reconciliation sweep that no webhook announced, by kind", [
    "kind",
  ]),
  syncUnlisted: counter(
    "svc_sync_unlisted_total",
    "Ids events named that the API did not list within SYNC_UNLISTED_GIVE_UP_SECONDS (reported in unlisted_records), by kind",
    ["kind"],
  ),
  syncRefreshReads: counter(
    "svc_sync_refresh_reads_total",
    "List reads planned by webhook refreshes, by kind and scope (company or restaurant)",
    ["kind", "scope"],
  ),
  mirrorRejected: counter(
    "svc_mirror_rejected_records_total",
    "Records read from the API that the mirror could not hold (set aside in rejected_records), by kind and reason",
    ["kind", "reason"],
  ),
  mirrorLag: gauge("svc_mirror_last_write_age_seconds", "Seconds since the mirror last took a write, by kind", ["kind"]),
  reconcileLastSuccess: gauge(
    "svc_reconcile_last_success_timestamp_seconds",
    "When the last complete full reconciliation pass (every kind) finished (the worker's start until one has; 0 where none is scheduled)",
  ),
  fullPassRecords: gauge("svc_reconcile_full_pass_records", "Records the running (or last) full reconciliation pass has read, by kind", [
    "kind",
  ]),
  fullPassPages: gauge("svc_reconcile_full_pass_pages", "Pages the running (or last) full reconciliation pass has read, by kind", ["kind"]),
  reconcileLastCompletePass: gauge(
    "svc_reconcile_last_complete_pass_timestamp_seconds",
    "When the last complete pass of a reconciliation tier finished (full: the oldest kind's), by tier (active, full)",
    ["tier"],
  ),
  reconcileActiveInterval: gauge(
    "svc_reconcile_active_interval_seconds",
    "RECONCILE_ACTIVE_INTERVAL_SECONDS as this worker runs it (0: the active tier is off)",
  ),
  syncRecordsChecked: counter(
    "svc_sync_records_checked_total",
    "Records an active or catch-up reconciliation pass read, by kind and tier (active, catch-up)",
    ["kind", "tier"],
  ),
  syncRecordsCorrected: counter(
    "svc_sync_records_corrected_total",
    "Records those passes found wrong in the mirror (written with a change), by kind, tier and cause (the change's source)",
    ["kind", "tier", "cause"],
  ),
});

/**
 * The upstream API's metrics: requests by route and status, 429s, and the shared rate budget by class.
 * Names, help texts and labels are what docs/ and the alert rules in deploy/prometheus read.
 */
const upstreamMetrics = ({ counter, gauge, histogram }: Makers) => ({
  upstreamRequests: counter("svc_upstream_requests_total", "Requests to the upstream API by route and status", [
    "method",
    "route",
    "status",
  ]),
  upstreamRateLimited: counter("svc_upstream_rate_limited_total", "429 answers from the upstream API"),
  rateBudgetRemaining: gauge("svc_upstream_rate_budget_remaining", "Requests left in the shared window of the API key"),
  upstreamPausedSeconds: gauge("svc_upstream_pause_seconds", "Seconds left in a shared Retry-After pause"),
  budgetSlots: counter(
    "svc_upstream_budget_slots_total",
    "Slots of the shared rate budget taken, by budget class (webhook, active, full)",
    ["class"],
  ),
  budgetWaitSeconds: histogram(
    "svc_upstream_budget_wait_seconds",
    "Time a call waited for its slot of the shared rate budget (pauses included), by budget class",
    ["class"],
    [0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
  ),
  budgetRateLimited: counter(
    "svc_upstream_budget_rate_limited_total",
    "429 answers from the upstream API, by the budget class of the call (every class pauses)",
    ["class"],
  ),
});

/** Queue depth by state, read at scrape time. */
export function collectQueueDepths(metrics: Metrics, queues: readonly Queue[]): void {
  metrics.addCollector(async () => {
    for (const q of queues) {
      const counts = await q.getJobCounts("waiting", "active", "delayed", "failed", "completed", "prioritized");
      for (const [state, n] of Object.entries(counts)) metrics.queueDepth.set({ queue: q.name, state }, n);
    }
  });
}

/** Seconds since the mirror last took a write, by kind. */
export function collectMirrorLag(
  metrics: Metrics,
  kinds: readonly string[],
  lastWriteAt: (kind: string) => Promise<number | undefined>,
): void {
  metrics.addCollector(async () => {
    const now = Date.now();
    for (const kind of kinds) {
      const at = await lastWriteAt(kind);
      if (at !== undefined) metrics.mirrorLag.set({ kind }, (now - at) / 1000);
    }
  });
}

/** What is left of the shared upstream rate budget, and of a shared Retry-After pause. */
export function collectRateBudget(metrics: Metrics, max: number, state: () => Promise<{ inWindow: number; pausedForMs: number }>): void {
  metrics.addCollector(async () => {
    const now = await state();
    metrics.rateBudgetRemaining.set(Math.max(0, max - now.inWindow));
    metrics.upstreamPausedSeconds.set(now.pausedForMs / 1000);
  });
}

/** The ingest stream's backlog (events accepted that no worker finished with) and its lag. */
export function collectIngestBacklog(metrics: Metrics, read: () => Promise<{ length: number; oldestAgeMs: number }>): void {
  metrics.addCollector(async () => {
    const backlog = await read();
    metrics.streamBacklog.set(backlog.length);
    metrics.consumerLag.set(backlog.oldestAgeMs / 1000);
  });
}

/**
 * What one worker's stream consumer holds, read at scrape time: entries read and not yet
 * acknowledged, their bytes (each bounded: INGEST_BATCH_SIZE, WORKER_MAX_INFLIGHT_BYTES), and the
 * attempts among them waiting for the event log to take their record.
 */
export function collectStreamConsumer(
  metrics: Metrics,
  consumer: { inflight(): { entries: number; bytes: number }; attemptsWaitingOnLog(): number },
): void {
  metrics.addCollector(() => {
    const { entries, bytes } = consumer.inflight();
    metrics.inflightEntries.set(entries);
    metrics.inflightBytes.set(bytes);
    metrics.attemptsWaitingOnLog.set(consumer.attemptsWaitingOnLog());
    return Promise.resolve();
  });
}

/** Whether the database answers within `timeoutMs` (a scrape must not hang on it), and how fast, at scrape time. */
export function collectDatabaseHealth(metrics: Metrics, ping: () => Promise<void>, timeoutMs = 2000): void {
  metrics.addCollector(async () => {
    const started = performance.now();
    const up = await withTimeout(ping(), timeoutMs, "database ping").then(
      () => 1,
      () => 0,
    );
    metrics.databaseUp.set(up);
    if (up) metrics.databasePingSeconds.set((performance.now() - started) / 1000);
  });
}

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
    /** When the last sweep finished (ISO 8601), the worker's start until one has (what the stall alert counts from); null where none is scheduled. */
    lastSuccessAt: string | null;
    /** When the last full pass that completed (every kind) finished; null until one has: never a start. */
    lastCompleteFullPassAt: string | null;
    /** Every other reconciliation/sync progress gauge the service exports (svc_reconcile_*, svc_sync_*), as exported. */
    progress: { name: string; help: string; values: SummaryValue[] }[];
  };
  /** Jobs per queue by state (failed: given up on; delayed: waiting for a retry). */
  queues: { queue: string; counts: Record<string, number> }[];
  database: { up: boolean | null };
}

const PROGRESS = /^svc_(reconcile|sync)_/;

/** One metric as the registry reads it out (name, help, type, labelled values). */
export type MetricJson = Awaited<ReturnType<Metrics["registry"]["getMetricsAsJSON"]>>[number];

const valuesOf = (m: Pick<MetricJson, "values">): SummaryValue[] =>
  m.values.map((v) => ({ labels: Object.fromEntries(Object.entries(v.labels).map(([k, l]) => [k, String(l)])), value: v.value }));
const single = (m: Pick<MetricJson, "values">): number | null => valuesOf(m)[0]?.value ?? null;

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
  // Each metric read through its own object: its name is written once, where it is defined.
  const lag = new Map(valuesOf(await metrics.mirrorLag.get()).map((v) => [v.labels.kind, v.value]));
  const remaining = single(await metrics.rateBudgetRemaining.get());
  const lastSuccessMetric = await metrics.reconcileLastSuccess.get();
  const lastSuccess = single(lastSuccessMetric);
  // The active tier's value is the worker's start until a pass completes: only the full tier's is a completed pass's.
  const lastCompleteMetric = await metrics.reconcileLastCompletePass.get();
  const lastCompleteFull = valuesOf(lastCompleteMetric).find((v) => v.labels.tier === "full")?.value;
  const queues = new Map<string, Record<string, number>>();
  for (const v of valuesOf(await metrics.queueDepth.get())) {
    const queue = v.labels.queue ?? "";
    queues.set(queue, { ...queues.get(queue), [v.labels.state ?? ""]: v.value });
  }
  const database = single(await metrics.databaseUp.get());
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
            pausedSeconds: single(await metrics.upstreamPausedSeconds.get()) ?? 0,
          },
    ingest: { backlog: single(await metrics.streamBacklog.get()), lagSeconds: single(await metrics.consumerLag.get()) },
    missedWebhooks: valuesOf(await metrics.missedWebhooks.get()),
    reconciliation: {
      lastSuccessAt: lastSuccess ? new Date(lastSuccess * 1000).toISOString() : null,
      lastCompleteFullPassAt: lastCompleteFull ? new Date(lastCompleteFull * 1000).toISOString() : null,
      progress: all
        .filter((m) => PROGRESS.test(m.name) && m.name !== lastSuccessMetric.name && m.name !== lastCompleteMetric.name)
        .map((m) => ({ name: m.name, help: m.help, values: valuesOf(m) })),
    },
    queues: [...queues].map(([queue, counts]) => ({ queue, counts })),
    database: { up: database === null ? null : database === 1 },
  };
}
