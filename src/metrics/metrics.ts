import { Counter, Gauge, Histogram, Registry } from "prom-client";

/**
 * The service's Prometheus metrics, on a registry of its own (never prom-client's global one), so
 * several instances in one process do not collide. Gauges that reflect Redis state are filled by
 * collectors at scrape time (see `addCollector`).
 */
export function createMetrics() {
  const registry = new Registry();
  const collectors: (() => Promise<void>)[] = [];
  const opts = { registers: [registry] };

  const metrics = {
    registry,
    eventsReceived: new Counter({
      name: "svc_webhook_events_received_total",
      help: "Events accepted (200), by type and by the index of the signing secret that matched",
      labelNames: ["type", "secret"],
      ...opts,
    }),
    eventsDeduplicated: new Counter({
      name: "svc_webhook_events_deduplicated_total",
      help: "Accepted redeliveries of an event id already seen within the window",
      labelNames: ["type"],
      ...opts,
    }),
    eventsRejected: new Counter({
      name: "svc_webhook_events_rejected_total",
      help: "Deliveries refused, by reason",
      labelNames: ["reason"],
      ...opts,
    }),
    enqueueSeconds: new Histogram({
      name: "svc_webhook_enqueue_seconds",
      help: "Time for Redis to acknowledge an event",
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      ...opts,
    }),
    jobs: new Counter({
      name: "svc_jobs_total",
      help: "Jobs finished, by queue, job name (event type) and outcome",
      labelNames: ["queue", "name", "outcome"],
      ...opts,
    }),
    jobSeconds: new Histogram({
      name: "svc_job_duration_seconds",
      help: "Time to run a job's handlers, by queue and job name",
      labelNames: ["queue", "name"],
      buckets: [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60],
      ...opts,
    }),
    queueDepth: new Gauge({ name: "svc_queue_jobs", help: "Jobs in each queue by state", labelNames: ["queue", "state"], ...opts }),
    upstreamRequests: new Counter({
      name: "svc_upstream_requests_total",
      help: "Requests to the upstream API by route and status",
      labelNames: ["method", "route", "status"],
      ...opts,
    }),
    upstreamRateLimited: new Counter({ name: "svc_upstream_rate_limited_total", help: "429 answers from the upstream API", ...opts }),
    rateBudgetRemaining: new Gauge({
      name: "svc_upstream_rate_budget_remaining",
      help: "Requests left in the shared window of the API key",
      ...opts,
    }),
    upstreamPausedSeconds: new Gauge({ name: "svc_upstream_pause_seconds", help: "Seconds left in a shared Retry-After pause", ...opts }),
    streamBacklog: new Gauge({
      name: "svc_ingest_backlog_events",
      help: "Events accepted by the edge that no worker has finished with yet (unread, or read and unacknowledged)",
      ...opts,
    }),
    consumerLag: new Gauge({
      name: "svc_ingest_lag_seconds",
      help: "Age of the oldest event in the ingest stream (0 when none)",
      ...opts,
    }),
    eventsConsumed: new Counter({
      name: "svc_ingest_consumed_total",
      help: "Events workers took from the ingest stream and settled",
      ...opts,
    }),
    eventsClaimed: new Counter({
      name: "svc_ingest_claimed_total",
      help: "Events a stopped worker left unacknowledged, moved into the events queue by another",
      ...opts,
    }),
    inflightEntries: new Gauge({
      name: "svc_ingest_inflight_entries",
      help: "Ingest stream entries this worker read and has not acknowledged yet (at most INGEST_BATCH_SIZE)",
      ...opts,
    }),
    inflightBytes: new Gauge({
      name: "svc_ingest_inflight_bytes",
      help: "Bytes of the ingest stream entries this worker holds (at most WORKER_MAX_INFLIGHT_BYTES, or one entry)",
      ...opts,
    }),
    attemptsWaitingOnLog: new Gauge({
      name: "svc_event_log_waiting_attempts",
      help: "Attempts handled from the ingest stream that wait for the event log to record them (the database is away or refuses writes)",
      ...opts,
    }),
    mirrorChanges: new Counter({
      name: "svc_mirror_changes_total",
      help: "Change events recorded with mirror writes, by kind and source (webhook, reconcile, backfill)",
      labelNames: ["kind", "source"],
      ...opts,
    }),
    missedWebhooks: new Counter({
      name: "svc_missed_webhooks_total",
      help: "Changes found by the reconciliation sweep that no webhook announced, by kind",
      labelNames: ["kind"],
      ...opts,
    }),
    syncUnlisted: new Counter({
      name: "svc_sync_unlisted_total",
      help: "Ids events named that the API did not list within SYNC_UNLISTED_GIVE_UP_SECONDS (reported in unlisted_records), by kind",
      labelNames: ["kind"],
      ...opts,
    }),
    syncRefreshReads: new Counter({
      name: "svc_sync_refresh_reads_total",
      help: "List reads planned by webhook refreshes, by kind and scope (company or restaurant)",
      labelNames: ["kind", "scope"],
      ...opts,
    }),
    mirrorRejected: new Counter({
      name: "svc_mirror_rejected_records_total",
      help: "Records read from the API that the mirror could not hold (set aside in rejected_records), by kind and reason",
      labelNames: ["kind", "reason"],
      ...opts,
    }),
    mirrorLag: new Gauge({
      name: "svc_mirror_last_write_age_seconds",
      help: "Seconds since the mirror last took a write, by kind",
      labelNames: ["kind"],
      ...opts,
    }),
    httpServerErrors: new Counter({
      name: "svc_http_server_errors_total",
      help: "Answers with a 5xx status (503: Redis away, backlog full or body budget spent), by status",
      labelNames: ["status"],
      ...opts,
    }),
    reconcileLastSuccess: new Gauge({
      name: "svc_reconcile_last_success_timestamp_seconds",
      help: "When the last complete full reconciliation pass (every kind) finished (the worker's start until one has; 0 where none is scheduled)",
      ...opts,
    }),
    budgetSlots: new Counter({
      name: "svc_upstream_budget_slots_total",
      help: "Slots of the shared rate budget taken, by budget class (webhook, active, full)",
      labelNames: ["class"],
      ...opts,
    }),
    budgetWaitSeconds: new Histogram({
      name: "svc_upstream_budget_wait_seconds",
      help: "Time a call waited for its slot of the shared rate budget (pauses included), by budget class",
      labelNames: ["class"],
      buckets: [0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      ...opts,
    }),
    budgetRateLimited: new Counter({
      name: "svc_upstream_budget_rate_limited_total",
      help: "429 answers from the upstream API, by the budget class of the call (every class pauses)",
      labelNames: ["class"],
      ...opts,
    }),
    fullPassRecords: new Gauge({
      name: "svc_reconcile_full_pass_records",
      help: "Records the running (or last) full reconciliation pass has read, by kind",
      labelNames: ["kind"],
      ...opts,
    }),
    fullPassPages: new Gauge({
      name: "svc_reconcile_full_pass_pages",
      help: "Pages the running (or last) full reconciliation pass has read, by kind",
      labelNames: ["kind"],
      ...opts,
    }),
    reconcileLastCompletePass: new Gauge({
      name: "svc_reconcile_last_complete_pass_timestamp_seconds",
      help: "When the last complete pass of a reconciliation tier finished (full: the oldest kind's), by tier (active, full)",
      labelNames: ["tier"],
      ...opts,
    }),
    reconcileActiveInterval: new Gauge({
      name: "svc_reconcile_active_interval_seconds",
      help: "RECONCILE_ACTIVE_INTERVAL_SECONDS as this worker runs it (0: the active tier is off)",
      ...opts,
    }),
    syncRecordsChecked: new Counter({
      name: "svc_sync_records_checked_total",
      help: "Records an active or catch-up reconciliation pass read, by kind and tier (active, catch-up)",
      labelNames: ["kind", "tier"],
      ...opts,
    }),
    syncRecordsCorrected: new Counter({
      name: "svc_sync_records_corrected_total",
      help: "Records those passes found wrong in the mirror (written with a change), by kind, tier and cause (the change's source)",
      labelNames: ["kind", "tier", "cause"],
      ...opts,
    }),
    role: new Gauge({
      name: "svc_role_info",
      help: "1 for the role this process runs (all, web or worker): a worker that stops being scraped is absent",
      labelNames: ["role"],
      ...opts,
    }),
    databaseUp: new Gauge({
      name: "svc_database_up",
      help: "1 when the database (mirror and event log) answered a ping at scrape time, else 0",
      ...opts,
    }),
    databasePingSeconds: new Gauge({
      name: "svc_database_ping_seconds",
      help: "How long the database took to answer the scrape's ping",
      ...opts,
    }),
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
  return metrics;
}

export type Metrics = ReturnType<typeof createMetrics>;
