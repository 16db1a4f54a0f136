import type { Job } from "bullmq";
import type { Logger } from "pino";
import type { RefreshOutcome } from "./refresh-kind.js";
import type { RefreshPace } from "./refresh-pace.js";
import type { PendingId, RefreshScheduler } from "./refresh-scheduler.js";
import type { RefreshJobData } from "./refresh-runs.js";
import type { SyncedKind } from "./resources.js";

export interface RefreshJobDeps {
  scheduler: Pick<RefreshScheduler, "holds" | "pending" | "runWithin" | "pace">;
  pace: RefreshPace;
  /** The kind's refresh (refresh-kind.ts), in its trace when tracing is on. */
  refresh: (kind: SyncedKind) => Promise<RefreshOutcome>;
  logger: Logger;
}

/**
 * The sync queue's `refresh` job, the kind's one job (RefreshRuns.runWithin): runs the kind's
 * refresh, then asks for the next run (`askNextRun`). Nothing waits while holding the kind: the
 * pace (refresh-pace.ts) is the next job's delay. A refresh job that is not the kind's one (an
 * operator's retry of a failed one) reads nothing and asks for the kind's one instead.
 */
export function createRefreshJob(deps: RefreshJobDeps): (job: Job) => Promise<RefreshOutcome | { handedOver: true }> {
  return async (job) => {
    const { kind } = job.data as RefreshJobData;
    if (!(await deps.scheduler.holds(kind, job.id ?? ""))) {
      await deps.scheduler.runWithin(kind, 0);
      return { handedOver: true };
    }
    const started = Date.now();
    const outcome = await deps.refresh(kind);
    const ms = Date.now() - started;
    const nextInMs = await askNextRun(deps, kind);
    const { calls, reads, found, written } = outcome;
    deps.logger.debug({ kind, ms, calls, reads, found, written, nextInMs }, "refresh done");
    return outcome;
  };
}

/**
 * Sets the kind's pace, then asks for the next run for when the first pending id is due. Then reads
 * again: BullMQ keeps the last ask made while a job runs, so a request noted after the first read
 * whose ask came before ours was replaced by ours; an id due sooner asks again. Returns the delay
 * asked for.
 */
async function askNextRun(deps: Pick<RefreshJobDeps, "scheduler" | "pace">, kind: SyncedKind): Promise<number | undefined> {
  const paceMs = await deps.pace();
  await deps.scheduler.pace(kind, paceMs);
  let asked: { due: number; delayMs: number } | undefined;
  for (;;) {
    const now = Date.now();
    const due = nextDue(await deps.scheduler.pending(kind), now);
    if (due === undefined || (asked && due >= asked.due)) return asked?.delayMs;
    asked = { due, delayMs: Math.max(due - now, paceMs) };
    await deps.scheduler.runWithin(kind, due - now);
  }
}

/**
 * When the first pending id is due: now for one noted or left over, else when its backoff ends;
 * undefined when none is pending.
 */
export function nextDue(pending: readonly PendingId[], now: number): number | undefined {
  let due = Infinity;
  for (const { note } of pending) due = Math.min(due, Math.max(now, note.retryAt ?? now));
  return Number.isFinite(due) ? due : undefined;
}
