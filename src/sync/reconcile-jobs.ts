import type { Job, Queue } from "bullmq";
import { DEFAULT_ACCOUNT, ownData } from "../config/defaults.js";
import type { Logger } from "pino";
import type { MirrorWriter } from "../mirror/change-outbox.js";
import type { Config } from "../config/config.js";
import type { SyncCheckpoint } from "../mirror/sync-checkpoints.js";
import { waitForRunningPass, type ActivePassLease } from "./active-pass-lease.js";
import { runActivePass, type CatchUp } from "./active-tier.js";
import { readImportState, type SweepChanges } from "./first-import.js";
import { runFullSlice } from "./full-tier.js";
import { runBackfill } from "./resumable-backfill.js";
import { SYNCED_KINDS, type SweepDeps } from "./resources.js";
import type { SyncedKind } from "../mirror/kinds.js";
import { jobYetToEnd } from "../queue/events-queue.js";
import { fullSliceJobId, syncJobDeduplicationId } from "../queue/job-ids.js";

/**
 * The job names of the reconciliation tiers and backfill on the sync queue, for whoever enqueues
 * them (the schedulers below, the operator API):
 * - `reconcile-active`: one active pass (data: none; `requestedBy: "operator"` runs after a running pass
 *   instead of being skipped);
 * - `reconcile-catch-up`: an active pass that reads back over a gap (data: CatchUpJobData);
 * - `reconcile-full`: starts the full tier's next slice (data `{ force: true }` starts a pass now);
 * - `backfill`: a resumable backfill in the worker (data: BackfillJobData);
 * - `reconcile`: the single sweep before the tiers: a job of that name left in a queue runs as a
 *   tick, and its scheduler is removed at start.
 */
export const RECONCILE_JOBS = {
  active: "reconcile-active",
  catchUp: "reconcile-catch-up",
  full: "reconcile-full",
  fullSlice: "reconcile-full-slice",
  backfill: "backfill",
  sweep: "reconcile",
} as const;

/** Whose sync a job runs: absent for `default` (the schedulers' ticks, and jobs queued before accounts). */
export interface AccountJobData {
  account?: string;
}

export interface CatchUpJobData extends AccountJobData {
  /** ISO instant: when the gap began (worker/worker-lifecycle.ts). */
  gapStart: string;
}
/** The gap a catch-up job without a readable `gapStart` covers. */
const CATCH_UP_DEFAULT_MS = 86_400_000;
/** How often a pass that waits behind the running one looks again (it runs within this of its end). */
export const QUEUED_PASS_POLL_MS = 1000;

export interface FullJobData extends AccountJobData {
  force?: boolean;
}
export interface BackfillJobData extends AccountJobData {
  kinds?: SyncedKind[];
  since?: string;
  restart?: boolean;
}

export interface ReconcileDeps extends SweepDeps {
  /** Whose sync this is: the jobs these processors queue (slices, passes) are the account's. */
  account: string;
  writer: MirrorWriter;
  pending: NonNullable<SweepChanges["pending"]>;
  /** One active pass at a time: a tick that finds one running is skipped. */
  lease: ActivePassLease;
  queue: Pick<Queue, "add" | "getJob" | "getDeduplicationJobId">;
  config: Config["worker"];
  /** Told of each active pass's pages and of a complete pass (the worker counts them: sync imports no metrics). */
  report: {
    page(labels: { kind: string; tier: string }, read: number, causes: readonly string[]): void;
    passComplete(tier: "active"): void;
  };
  logger: Logger;
}

/** The processors of the reconciliation and backfill jobs (worker/sync-worker.ts runs them by name). */
export function reconcileProcessors(deps: ReconcileDeps): Record<string, (job: Job, token?: string) => Promise<unknown>> {
  const changes: SweepChanges = {
    writer: deps.writer,
    source: "reconcile",
    pending: deps.pending,
    importChanges: deps.config.syncImportChangeEvents,
  };
  const fullSlice = async (job: Job) => {
    const outcome = await runFullSlice({
      ...deps,
      changes,
      intervalMs: deps.config.reconcileIntervalMs,
      maxPages: deps.config.reconcileFullSlicePages,
      force: (job.data as FullJobData).force === true,
    });
    const paused = Object.values(outcome.kinds).find((k) => k.state === "paused");
    // More to read: the next slice right away (a position-named job, so two slices never queue for one position).
    if (paused) await addSlice(deps, paused.checkpoint);
    return { pages: outcome.pages, kinds: Object.fromEntries(Object.entries(outcome.kinds).map(([k, v]) => [k, v.state])) };
  };
  /** One active pass under the lease; `catchUp` reads back over a gap. Undefined: another pass runs. */
  const activePass = async (job: Job, token: string | undefined, catchUp?: CatchUp) => {
    const lease = await deps.lease.hold(token ?? job.id ?? "");
    if (!lease) return undefined;
    const tier = catchUp ? "catch-up" : "active";
    try {
      const outcome = await runActivePass({
        ...deps,
        changes,
        ...(catchUp ? { catchUp } : {}),
        onPage: (kind, read, causes) => deps.report.page({ kind, tier }, read, causes),
      });
      // The stall alert watches the env company's pass; an account's health is its own (docs/accounts.md).
      if (deps.account === DEFAULT_ACCOUNT) deps.report.passComplete("active");
      deps.logger.info({ ...outcome, ...(catchUp ? { catchUp } : {}) }, `${tier} reconciliation pass done`);
      return outcome;
    } finally {
      await lease.letGo();
    }
  };
  return {
    [RECONCILE_JOBS.active]: async (job, token) => {
      const byOperator = (job.data as { requestedBy?: string }).requestedBy === "operator";
      // A catch-up waiting or running reads all a tick would and more: the tick would only read it twice.
      if (!byOperator && (await catchUpPending(deps))) return { skipped: "a catch-up pass is queued or running" };
      const outcome = await activePass(job, token);
      if (outcome) return outcome;
      // An operator's "reconcile now" runs right after the running pass (it may have begun before
      // the change they mean); a scheduled tick is skipped: the running pass reads what it would.
      if (byOperator) return waitForRunningPass(job, token, QUEUED_PASS_POLL_MS);
      return { skipped: "an active pass is running" };
    },
    [RECONCILE_JOBS.catchUp]: async (job, token) => {
      // A job without a readable start (queued by hand) catches up over the last day.
      const gapStart = Date.parse((job.data as CatchUpJobData).gapStart) || (await deps.mirror.clock()).getTime() - CATCH_UP_DEFAULT_MS;
      const catchUp = { gapStart: new Date(gapStart) };
      // Behind a running pass, never instead of it: that pass began before it knew of the gap.
      return (await activePass(job, token, catchUp)) ?? waitForRunningPass(job, token, QUEUED_PASS_POLL_MS);
    },
    // The tick: a slice when a pass runs or is due (an operator's `force` starts one now).
    [RECONCILE_JOBS.full]: async (job) => ((job.data as FullJobData).force ? fullSlice(job) : tick(deps)),
    [RECONCILE_JOBS.fullSlice]: fullSlice,
    // Jobs named `reconcile` (the single sweep before the tiers) left in a queue run as a tick.
    [RECONCILE_JOBS.sweep]: () => tick(deps),
    [RECONCILE_JOBS.backfill]: async (job) => {
      const data = job.data as BackfillJobData;
      const outcome = await runBackfill({
        ...deps,
        kinds: data.kinds ?? SYNCED_KINDS,
        since: data.since ?? null,
        restart: data.restart === true,
      });
      deps.logger.info(outcome, "backfill done");
      return outcome;
    },
  };
}

/** Adds the full tier's slice when some kind's pass runs or is due; nothing otherwise (one database read). */
async function tick(deps: ReconcileDeps): Promise<{ slice: boolean }> {
  const state = await readImportState(deps);
  const saved = SYNCED_KINDS.flatMap((kind) => state.full(kind) ?? []);
  // A kind a whole-list backfill walks now is that backfill's: a slice would find nothing to read.
  const running = saved.find((c) => c.passCompletedAt === null && !state.backfillWalking(c.kind));
  const due = SYNCED_KINDS.some((kind) => !state.backfillWalking(kind) && state.passDue(kind, deps.config.reconcileIntervalMs));
  if (running) await addSlice(deps, running);
  else if (due) await addOnce(deps, fullSliceJobId({ after: saved.map((c) => c.passStartedAt) }, deps.account));
  return { slice: running !== undefined || due };
}

const addSlice = (deps: Pick<ReconcileDeps, "queue" | "account">, at: SyncCheckpoint) => addOnce(deps, fullSliceJobId(at, deps.account));

/**
 * A slice named by its position: added once while it waits or runs. One that failed for good (the
 * API away through all its attempts) would keep its id in the failed set and block that position
 * for as long as failed jobs are kept, so it is removed and the slice added again (the next tick).
 */
async function addOnce({ queue, account }: Pick<ReconcileDeps, "queue" | "account">, jobId: string): Promise<void> {
  const existing = await queue.getJob(jobId);
  if (existing && (await existing.isFailed())) await existing.remove();
  await queue.add(RECONCILE_JOBS.fullSlice, ownData(account), { jobId });
}

/**
 * Whether a catch-up pass waits or runs (its deduplication key names a job not yet finished).
 * Running counts too: after a restart a worker takes the catch-up and the first tick at once, and
 * the tick that reached the lease first read the bookings before the catch-up read them again.
 */
async function catchUpPending({ queue, account }: Pick<ReconcileDeps, "queue" | "account">): Promise<boolean> {
  const id = await queue.getDeduplicationJobId(syncJobDeduplicationId(RECONCILE_JOBS.catchUp, account));
  const job = id ? await queue.getJob(id) : undefined;
  return job ? jobYetToEnd(await job.getState()) : false;
}

/** Enqueues one catch-up pass from `gapStart`: deduplicated while one waits or runs (several workers may see the gap). */
export async function enqueueCatchUp(queue: Pick<Queue, "add">, gapStart: Date, account?: string): Promise<void> {
  const data: CatchUpJobData = { gapStart: gapStart.toISOString(), ...ownData(account) };
  await queue.add(RECONCILE_JOBS.catchUp, data, { deduplication: { id: syncJobDeduplicationId(RECONCILE_JOBS.catchUp, account) } });
}
