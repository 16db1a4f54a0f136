import { DelayedError, UnrecoverableError, Worker, type Job, type Queue, type Telemetry } from "bullmq";
import { warnUnlessOutage, type RedisClient } from "../redis/redis.js";
import type { Logger } from "pino";
import { SYNC_QUEUE } from "../queue/events-queue.js";
import { withBoundedText } from "../events/errors.js";
import { isPermanentUpstreamError, UpstreamRateLimitError } from "../upstream/errors.js";
import type { Config } from "../config/config.js";
import type { Metrics } from "../metrics/metrics.js";
import type { EventLog } from "../mirror/event-log.js";
import type { StepStore } from "../mirror/step-store.js";
import type { MirrorStore } from "../mirror/mirror-store.js";
import type { SyncCheckpoint, SyncCheckpoints } from "../mirror/sync-checkpoints.js";
import type { Upstream } from "./upstream.js";
import { createGapWatch, pruneEventLog } from "./worker-lifecycle.js";
import { createRefreshJob, createRefreshPace, REFRESH_JOB, type RefreshJobData, type RefreshRequests } from "../sync/refresh-queue.js";
import type { MirrorWriter } from "../mirror/change-outbox.js";
import {
  enqueueCatchUp,
  RECONCILE_JOBS,
  reconcileProcessors,
  type AccountJobData,
  type BackfillJobData,
  type FullJobData,
} from "../sync/reconcile-jobs.js";
import { carriedAccount, ownData } from "../config/defaults.js";
import { syncJobDeduplicationId } from "../queue/job-ids.js";
import { expectDefined } from "../errors.js";
import { createRefusedFilters, refreshKind } from "../sync/refresh-kind.js";
import { SYNCED_KINDS } from "../sync/resources.js";
import type { SyncedKind } from "../mirror/kinds.js";

/** What the operator API and the schedulers put in reconcile and backfill jobs (reconcile-jobs.ts). */
export type SyncJobData = RefreshJobData | FullJobData | BackfillJobData | Record<string, never>;

/** What runs each named job of the sync queue: a table, not a switch. */
export type SyncJobProcessors = Record<string, (job: Job<SyncJobData>, token?: string) => Promise<unknown>>;

export interface SyncWorkerOptions {
  connection: RedisClient;
  prefix: string;
  /** The sync queue this worker serves: a 429 parks it with `rateLimit`. */
  queue: Pick<Queue, "rateLimit">;
  processors: SyncJobProcessors;
  /** WORKER_CONCURRENCY: the worker takes `syncSlots` of it. */
  concurrency: number;
  lockMs: number;
  maxStalls: number;
  logger: Logger;
  /** BullMQ telemetry when tracing is on: each job runs in the trace of whoever added it. */
  telemetry?: Telemetry;
}

/** The sync worker's slots for WORKER_CONCURRENCY: at least 2, so a webhook refresh never waits behind a long reconciliation sweep. */
export const syncSlots = (concurrency: number): number => Math.max(2, concurrency);

/**
 * The worker of the sync queue (refresh, reconcile and maintenance jobs). A 429 that outlived the
 * client's own waiting parks the whole queue for Retry-After (a registered account's job alone:
 * its key's budget is its own) without spending an attempt; an error
 * no retry can fix (a 4xx) fails the job at once.
 */
export function createSyncWorker(options: SyncWorkerOptions): Worker<SyncJobData> {
  const { processors, logger } = options;
  return new Worker<SyncJobData>(
    SYNC_QUEUE,
    async function processSync(job: Job<SyncJobData>, token?: string) {
      const processor = processors[job.name];
      if (!processor) throw new UnrecoverableError(`no processor for sync job "${job.name}" in this worker`);
      try {
        return await processor(job, token);
      } catch (err) {
        withBoundedText(err); // BullMQ keeps the message and the stack in Redis
        if (err instanceof UpstreamRateLimitError) {
          // A registered account's 429 is its key's alone: its job waits, the other accounts' go on.
          const account = carriedAccount((job.data as AccountJobData).account);
          if (account !== undefined) {
            await job.moveToDelayed(Date.now() + err.retryAfterMs, token);
            throw new DelayedError();
          }
          await options.queue.rateLimit(err.retryAfterMs);
          throw Worker.RateLimitError();
        }
        // The upstream error stays its cause: the problems' rules tell its kind by it (problems/job-facts.ts).
        if (isPermanentUpstreamError(err)) throw Object.assign(new UnrecoverableError((err as Error).message), { cause: err });
        throw err;
      }
    },
    {
      connection: options.connection,
      prefix: options.prefix,
      concurrency: syncSlots(options.concurrency),
      autorun: false,
      lockDuration: options.lockMs,
      stalledInterval: options.lockMs,
      maxStalledCount: options.maxStalls,
      // BullMQ only honours a queue's rateLimit() in a worker when a limiter is configured; the real budget is
      // the shared Redis limiter in the API client, so this one is set far above it.
      limiter: { max: 10_000, duration: 1000 },
      ...(options.telemetry ? { telemetry: options.telemetry } : {}),
    },
  ).on("error", warnUnlessOutage(logger, "sync worker error"));
}

// What runs each job of the sync queue.

/** The hourly job that prunes the event log and its steps. */
const PRUNE_JOB = "prune-events";

/** Every job name of the sync queue (a bounded label for the job metrics). */
export const SYNC_JOBS: readonly string[] = [REFRESH_JOB, PRUNE_JOB, ...Object.values(RECONCILE_JOBS)];

/** One account's sync: the env company's, or a registered account's (its key, its stores). */
export interface AccountSync {
  account: string;
  /** The account's API client, on its key's own budget. */
  upstream: Upstream;
  mirror: MirrorStore;
  checkpoints: SyncCheckpoints;
  /** Writes the account's mirror with its change events. */
  writer: MirrorWriter;
  refresh: RefreshRequests;
  /** Bound to the account. */
  logger: Logger;
}

/** The registered accounts, as the sync queue's jobs reach them. */
export interface SyncAccounts {
  /** Their ids: whose ticks a scheduler's tick queues. */
  list(): Promise<string[]>;
  /**
   * The account's sync, the same object while its key is; undefined once it is no longer
   * registered (its jobs end, reading nothing). Throws AccountsUnavailableError while unknown.
   */
  syncOf(account: string): AccountSync | undefined;
}

/**
 * What runs each job of the sync queue: the hourly prune of the event log (and its steps) always;
 * with an upstream API, each account's refreshes and reconciliation tiers that read it into its
 * mirror, by the job's `account` (none: `default`'s).
 */
export function syncProcessors(deps: {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  eventLog: EventLog;
  steps: StepStore;
  syncQueue: Queue;
  /** The env company's sync; undefined without an upstream API. */
  main: AccountSync | undefined;
  accounts?: SyncAccounts | undefined;
}): SyncJobProcessors {
  const { config, metrics, main } = deps;
  const processors: SyncJobProcessors = {
    // Steps go with their events: by when they started, under the same retention.
    [PRUNE_JOB]: async () => ({
      pruned: await pruneEventLog(deps.eventLog, config.eventRetentionDays),
      prunedSteps: await pruneEventLog(deps.steps, config.eventRetentionDays),
    }),
  };
  if (!main) return processors;
  // One per process: a filter the upstream refused is named once and never asked again.
  const refused = createRefusedFilters();
  const build = (sync: AccountSync) => accountProcessors({ ...deps, sync, refused });
  // Fresh from the start, so "stalled" means no full pass completed for a while, not "none yet".
  if (config.worker.reconcileIntervalMs > 0) collectFullTier(metrics, main.checkpoints, Date.now());
  showActiveTier(metrics, config.worker);
  const own = build(main);
  return Object.assign(processors, deps.accounts ? byAccount(own, deps.accounts, build, deps.syncQueue) : own);
}

/** The refresh and reconciliation jobs of one account. */
function accountProcessors(deps: {
  config: Config;
  metrics: Metrics;
  syncQueue: Queue;
  sync: AccountSync;
  refused: ReturnType<typeof createRefusedFilters>;
}): SyncJobProcessors {
  const { config, metrics, sync, refused } = deps;
  const { upstream, mirror, writer, logger } = sync;
  const { api } = upstream;
  const { queue: scheduler, activePassLease } = sync.refresh;
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
  return {
    [REFRESH_JOB]: createRefreshJob({
      pace: createRefreshPace({
        state: () => upstream.limiter.state(),
        share: config.worker.syncRefreshPaceShare,
        maxWaitMs: config.worker.syncRefreshPaceMaxWaitMs,
      }),
      scheduler,
      logger,
      refresh: (kind) => scheduler.traced(kind, refresh(kind)),
    }),
    ...reconcileProcessors({
      ...sync,
      api,
      report: {
        page: (labels, read, causes) => {
          metrics.syncRecordsChecked.inc(labels, read);
          for (const cause of causes) metrics.syncRecordsCorrected.inc({ ...labels, cause });
        },
        passComplete: (tier) => metrics.reconcileLastCompletePass.setToCurrentTime({ tier }),
      },
      pending: (kind) => scheduler.pending(kind),
      lease: activePassLease,
      queue: deps.syncQueue,
      config: config.worker,
    }),
  };
}

/**
 * The scheduler's ticks that every account gets: a tick without an account runs `default`'s and
 * queues the same tick for each registered account (deduplicated while one waits or runs, so a
 * slow account's ticks never pile up), as does a catch-up after a gap.
 */
const TICKS_FOR_EVERY_ACCOUNT: readonly string[] = [RECONCILE_JOBS.full, RECONCILE_JOBS.active, RECONCILE_JOBS.catchUp];

/**
 * Queues the job `name` for each account, deduplicated per account while one waits or runs: a
 * tick (the schedulers', a gap's catch-up), or a new account's first full tick, which starts its
 * first import.
 */
export async function queueForAccounts(
  queue: Pick<Queue, "addBulk">,
  name: string,
  data: SyncJobData,
  accounts: readonly string[],
): Promise<void> {
  await queue.addBulk(
    accounts.map((account) => ({
      name,
      data: { ...data, ...ownData(account) },
      opts: { deduplication: { id: syncJobDeduplicationId(name, account) } },
    })),
  );
}

/**
 * Routes each job to its account's processors (none named: `default`'s), built once per account
 * and key. A job of an account no longer registered ends at once: its sync stopped with it.
 */
function byAccount(
  own: SyncJobProcessors,
  accounts: SyncAccounts,
  build: (sync: AccountSync) => SyncJobProcessors,
  queue: Pick<Queue, "addBulk">,
): SyncJobProcessors {
  const built = new WeakMap<AccountSync, SyncJobProcessors>();
  const processorsOf = (account: string) => {
    const sync = accounts.syncOf(account);
    if (!sync) return undefined;
    let processors = built.get(sync);
    if (!processors) built.set(sync, (processors = build(sync)));
    return processors;
  };
  const everyAccount = async (job: Job<SyncJobData>) => queueForAccounts(queue, job.name, job.data, await accounts.list());
  return Object.fromEntries(
    Object.keys(own).map((name) => [
      name,
      async (job: Job<SyncJobData>, token?: string) => {
        const account = carriedAccount((job.data as AccountJobData).account);
        if (account !== undefined) {
          const processor = processorsOf(account)?.[name];
          return processor ? processor(job, token) : { skipped: `account ${account} is not registered` };
        }
        // A scheduler's tick (BullMQ names its job scheduler) or a gap's catch-up: every account's too.
        const tick = name === RECONCILE_JOBS.catchUp || (job.repeatJobKey !== undefined && TICKS_FOR_EVERY_ACCOUNT.includes(name));
        if (tick) await everyAccount(job);
        return expectDefined(own[name], name)(job, token);
      },
    ]),
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

// When the sync queue's scheduled jobs run.

const PRUNE_EVERY_MS = 3600_000;
/** How often the full tier looks whether a pass is due (slices of a running pass chain on their own). */
export const FULL_TICK_MS = 60_000;

/**
 * The job schedulers live in Redis: made at start, and again when Redis lost them (worker-lifecycle.ts),
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
}) {
  const { config, syncQueue, syncing } = deps;
  /** Makes (or updates) the job schedulers: the reconciliation tiers' and the hourly prune. */
  const schedule = async () => {
    await scheduleReconcile(syncQueue, config.worker, syncing);
    await scheduleEvery(syncQueue, PRUNE_JOB, PRUNE_EVERY_MS);
  };
  /** Marks the workers alive; after a gap, restores what Redis lost and queues a catch-up. */
  const gapWatch = createGapWatch({
    ...deps,
    redis: deps.connection,
    prefix: config.queuePrefix,
    intervalMs: config.worker.syncWatchIntervalMs,
    restore: async () => {
      await schedule();
      await deps.restore();
    },
    ...(syncing && config.worker.reconcileIntervalMs > 0 ? { catchUp: (gapStart: Date) => enqueueCatchUp(syncQueue, gapStart) } : {}),
  });
  return { schedule, gapWatch };
}

/** Keeps the schedulers of the tiers as the config says: RECONCILE_INTERVAL_SECONDS=0 turns every tier off. */
export async function scheduleReconcile(queue: Queue, config: Config["worker"], enabled: boolean): Promise<void> {
  // The single hourly sweep the tiers replace.
  await queue.removeJobScheduler(RECONCILE_JOBS.sweep);
  const on = enabled && config.reconcileIntervalMs > 0;
  await scheduleEvery(queue, RECONCILE_JOBS.full, on ? Math.min(FULL_TICK_MS, config.reconcileIntervalMs) : 0);
  await scheduleEvery(queue, RECONCILE_JOBS.active, on ? config.reconcileActiveIntervalMs : 0);
}

/** Runs the job `name` every `ms` (its scheduler made or updated), or no more when `ms` is 0 (its scheduler removed). */
async function scheduleEvery(queue: Queue, name: string, ms: number): Promise<void> {
  if (ms > 0) await queue.upsertJobScheduler(name, { every: ms }, { name, data: {} });
  else await queue.removeJobScheduler(name);
}
