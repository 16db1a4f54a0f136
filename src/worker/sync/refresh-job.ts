import type { Job } from "bullmq";
import type { Logger } from "pino";
import type { RefreshOutcome } from "./refresh-kind.js";
import { waitForLease, type RefreshLease } from "./refresh-lease.js";
import type { RefreshPace } from "./refresh-pace.js";
import type { RefreshJobData, RefreshScheduler } from "./refresh-scheduler.js";
import type { SyncedKind } from "./synced-kinds.js";

/**
 * The sync queue's `refresh` job: with its kind's lease held (one refresh per kind at a time,
 * refresh-lease.ts), it waits as the budget's pace says (refresh-pace.ts: events meanwhile join
 * its batch), releases the kind's debounce so a later event schedules the next job, and runs the
 * refresh. A job that finds the lease taken waits for it without spending an attempt.
 */
export function createRefreshJob(deps: {
  leases: RefreshLease;
  pace: RefreshPace;
  scheduler: Pick<RefreshScheduler, "release">;
  /** The kind's refresh (refresh-kind.ts), in its trace when tracing is on. */
  refresh: (kind: SyncedKind) => Promise<RefreshOutcome>;
  /** A debug line per job: how long it was paced, how long its reads took, what they found. */
  logger: Logger;
}): (job: Job, token?: string) => Promise<RefreshOutcome> {
  return async (job, token) => {
    // Kind-wide: a job queued by an older version with a restaurant id serves the whole kind too.
    const { kind } = job.data as RefreshJobData;
    const lease = await deps.leases.hold(kind, token ?? job.id ?? "");
    if (!lease) return waitForLease(job, token);
    try {
      const pacedMs = await deps.pace.admit();
      await deps.scheduler.release(kind);
      const started = Date.now();
      const outcome = await deps.refresh(kind);
      const { calls, reads, found, written } = outcome;
      deps.logger.debug({ kind, pacedMs, ms: Date.now() - started, calls, reads, found, written }, "refresh done");
      return outcome;
    } finally {
      await lease.letGo();
    }
  };
}
