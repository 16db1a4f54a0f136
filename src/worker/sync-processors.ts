import type { Queue } from "bullmq";
import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import type { Metrics } from "../metrics/metrics.js";
import type { EventLog } from "../mirror/event-log.js";
import type { StepStore } from "../mirror/step-store.js";
import type { MirrorStore } from "../mirror/mirror-store.js";
import type { SyncCheckpoint, SyncCheckpoints } from "../mirror/sync-checkpoints.js";
import type { Upstream } from "./upstream.js";
import { pruneEventLog } from "./worker-lifecycle.js";
import { type RefreshRequests, createRefreshJob, createRefreshPace } from "../sync/refresh-queue.js";
import type { MirrorWriter } from "../mirror/change-outbox.js";
import { reconcileProcessors } from "../sync/reconcile-jobs.js";
import { createRefusedFilters, refreshKind } from "../sync/refresh-kind.js";
import { SYNCED_KINDS, type SyncedKind } from "../sync/resources.js";
import type { SyncJobProcessors } from "./sync-worker.js";

/**
 * What runs each job of the sync queue: the hourly prune of the event log (and its steps) always;
 * with an upstream API, the refreshes and the reconciliation tiers that read it into the mirror.
 */
export function syncProcessors(deps: {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  mirror: MirrorStore;
  eventLog: EventLog;
  steps: StepStore;
  checkpoints: SyncCheckpoints;
  syncQueue: Queue;
  upstream: Upstream | undefined;
  refresh: RefreshRequests;
  writer: MirrorWriter;
}): SyncJobProcessors {
  const { config, logger, metrics, mirror, upstream, writer } = deps;
  const { queue: scheduler, activePassLease } = deps.refresh;
  const processors: SyncJobProcessors = {
    // Steps go with their events: by when they started, under the same retention.
    "prune-events": async () => ({
      pruned: await pruneEventLog(deps.eventLog, config.eventRetentionDays),
      prunedSteps: await pruneEventLog(deps.steps, config.eventRetentionDays),
    }),
  };
  if (!upstream) return processors;
  const { api } = upstream;
  // One per process: a filter the upstream refused is named once and never asked again.
  const refused = createRefusedFilters();
  const refresh = (kind: SyncedKind) => () =>
    refreshKind({
      api,
      mirror,
      scheduler,
      writer,
      logger,
      kind,
      maxPages: config.worker.syncRefreshMaxPages,
      giveUpMs: config.worker.syncUnlistedGiveUpMs,
      refused,
      onRead: ({ scope }) => metrics.syncRefreshReads.inc({ kind, scope }),
      onUnlisted: () => metrics.syncUnlisted.inc({ kind }),
    });
  processors.refresh = createRefreshJob({
    pace: createRefreshPace({
      state: () => upstream.limiter.state(),
      share: config.worker.syncRefreshPaceShare,
      maxWaitMs: config.worker.syncRefreshPaceMaxWaitMs,
    }),
    scheduler,
    logger,
    refresh: (kind) => scheduler.traced(kind, refresh(kind)),
  });
  // Fresh from the start, so "stalled" means no full pass completed for a while, not "none yet".
  if (config.worker.reconcileIntervalMs > 0) collectFullTier(metrics, deps.checkpoints, Date.now());
  showActiveTier(metrics, config.worker);
  return Object.assign(
    processors,
    reconcileProcessors({
      api,
      mirror,
      checkpoints: deps.checkpoints,
      writer,
      pending: (kind) => scheduler.pending(kind),
      lease: activePassLease,
      queue: deps.syncQueue,
      config: config.worker,
      metrics,
      logger,
    }),
  );
}

/**
 * The active tier's configured interval, and its last complete pass as this worker's start until
 * one completes: the stall alert (deploy/prometheus/alerts.yml) compares the two.
 */
export function showActiveTier(metrics: Metrics, config: Config["worker"]): void {
  const on = config.reconcileIntervalMs > 0 && config.reconcileActiveIntervalMs > 0;
  metrics.reconcileActiveInterval.set(on ? config.reconcileActiveIntervalMs / 1000 : 0);
  if (on) metrics.reconcileLastCompletePass.setToCurrentTime({ tier: "active" });
}

/** The full tier's progress and the age of its last complete pass, read at scrape time from the checkpoints. */
export function collectFullTier(metrics: Metrics, checkpoints: SyncCheckpoints, startedAt: number): void {
  metrics.addCollector(async () => {
    const saved = await checkpoints.list("full");
    for (const c of saved) {
      metrics.fullPassRecords.set({ kind: c.kind }, c.records);
      metrics.fullPassPages.set({ kind: c.kind }, c.pages);
    }
    const complete = lastCompleteFullPass(saved);
    if (complete) metrics.reconcileLastCompletePass.set({ tier: "full" }, complete.getTime() / 1000);
    // "A complete pass", as before the tiers; the worker's start until one has completed.
    metrics.reconcileLastSuccess.set(Math.max(startedAt, complete?.getTime() ?? 0) / 1000);
  });
}

/**
 * When the last complete full pass of every kind was (the oldest kind's), or undefined until each
 * kind has completed one: "the mirror was checked against the whole upstream by then".
 */
function lastCompleteFullPass(checkpoints: readonly SyncCheckpoint[]): Date | undefined {
  let oldest: Date | undefined;
  for (const kind of SYNCED_KINDS) {
    const at = checkpoints.find((c) => c.kind === kind)?.lastCompleteAt;
    if (!at) return undefined;
    if (!oldest || at < oldest) oldest = at;
  }
  return oldest;
}
