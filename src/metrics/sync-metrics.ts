import { Counter, Gauge, type Registry } from "prom-client";

/**
 * The mirror's and the sync's metrics: changes, records refused, freshness, and the reconciliation tiers' progress.
 * Kept in this order: the health page lists the svc_reconcile_* and svc_sync_* gauges as registered.
 * Names, help texts and labels are what docs/ and the alert rules in deploy/prometheus read.
 */
export function syncMetrics(opts: { registers: Registry[] }) {
  return {
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
    reconcileLastSuccess: new Gauge({
      name: "svc_reconcile_last_success_timestamp_seconds",
      help: "When the last complete full reconciliation pass (every kind) finished (the worker's start until one has; 0 where none is scheduled)",
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
  };
}
