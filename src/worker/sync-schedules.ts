import type { Queue } from "bullmq";
import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import type { SyncCheckpoints } from "../mirror/sync-checkpoints.js";
import type { RedisClient } from "../redis/redis.js";
import { createGapWatch, type GapWatch } from "./worker-lifecycle.js";
import { enqueueCatchUp, RECONCILE_JOBS } from "../sync/reconcile-jobs.js";

const PRUNE_EVERY_MS = 3600_000;
/** How often the full tier looks whether a pass is due (slices of a running pass chain on their own). */
export const FULL_TICK_MS = 60_000;

export interface SyncSchedules {
  /** Makes (or updates) the job schedulers: the reconciliation tiers' and the hourly prune. */
  schedule(): Promise<void>;
  /** Marks the workers alive; after a gap, restores what Redis lost and queues a catch-up. */
  gapWatch: GapWatch;
}

/**
 * The job schedulers live in Redis: made at start, and again when Redis lost them (gap-watch.ts),
 * together with whatever else the worker keeps there (`restore`: the ingest stream's group).
 */
export function createSyncSchedules(deps: {
  config: Config;
  logger: Logger;
  connection: RedisClient;
  checkpoints: SyncCheckpoints;
  syncQueue: Queue;
  /** False without an upstream API: no reconciliation, and no catch-up after a gap. */
  syncing: boolean;
  restore: () => Promise<void>;
}): SyncSchedules {
  const { config, syncQueue, syncing } = deps;
  const schedule = async () => {
    await scheduleReconcile(syncQueue, config.worker, syncing);
    await syncQueue.upsertJobScheduler("prune-events", { every: PRUNE_EVERY_MS }, { name: "prune-events", data: {} });
  };
  const gapWatch = createGapWatch({
    redis: deps.connection,
    prefix: config.queuePrefix,
    checkpoints: deps.checkpoints,
    intervalMs: config.worker.syncWatchIntervalMs,
    restore: async () => {
      await schedule();
      await deps.restore();
    },
    ...(syncing && config.worker.reconcileIntervalMs > 0 ? { catchUp: (gapStart: Date) => enqueueCatchUp(syncQueue, gapStart) } : {}),
    logger: deps.logger,
  });
  return { schedule, gapWatch };
}

/** Keeps the schedulers of the tiers as the config says: RECONCILE_INTERVAL_SECONDS=0 turns every tier off. */
export async function scheduleReconcile(queue: Queue, config: Config["worker"], enabled: boolean): Promise<void> {
  // The single hourly sweep the tiers replace.
  await queue.removeJobScheduler("reconcile");
  const on = enabled && config.reconcileIntervalMs > 0;
  if (on)
    await queue.upsertJobScheduler(
      RECONCILE_JOBS.full,
      { every: Math.min(FULL_TICK_MS, config.reconcileIntervalMs) },
      { name: RECONCILE_JOBS.full, data: {} },
    );
  else await queue.removeJobScheduler(RECONCILE_JOBS.full);
  if (on && config.reconcileActiveIntervalMs > 0)
    await queue.upsertJobScheduler(
      RECONCILE_JOBS.active,
      { every: config.reconcileActiveIntervalMs },
      { name: RECONCILE_JOBS.active, data: {} },
    );
  else await queue.removeJobScheduler(RECONCILE_JOBS.active);
}
