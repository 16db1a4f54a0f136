import type { Logger } from "pino";
import type { MirrorWriter } from "../mirror/change-outbox.js";
import type { SyncCheckpoint } from "../mirror/sync-checkpoints.js";
import { codedError } from "../errors.js";
import { readImportState } from "./first-import.js";
import { SYNCED_KINDS, type SweepDeps } from "./resources.js";
import type { SyncedKind } from "../mirror/kinds.js";
import { walkList } from "./walk-list.js";

export interface BackfillOptions extends SweepDeps {
  kinds: readonly SyncedKind[];
  /** YYYY-MM-DD: orders created on or after it, bookings dated on or after it; menus whole. */
  since?: string | null;
  /** Start every kind from the top, whatever its checkpoint says. */
  restart?: boolean;
  /** Writes with `backfill` change events; without it, none (`--no-changes`). */
  writer?: MirrorWriter;
  signal?: AbortSignal;
  /** Each kind's page cap (tests make it small). @defaultValue MAX_WALK_PAGES (upstream/paginate.ts) */
  pageCap?: number;
  logger?: Logger;
  /** Once as each kind starts (`resumed`: from a saved page) and after every page. */
  onProgress?: (progress: BackfillProgress) => void;
}

export interface BackfillProgress {
  kind: SyncedKind;
  checkpoint: SyncCheckpoint;
  /** Records this run read of the kind (the checkpoint counts the whole pass, earlier runs included). */
  records: number;
  /** The pass went on from a page a stopped run saved. */
  resumed: boolean;
  /** The kind had already finished in the interrupted run: not read again. */
  skipped: boolean;
  done: boolean;
}

export interface BackfillOutcome {
  /** Records read by this run, by kind. */
  totals: Record<SyncedKind, number>;
  /** complete: every kind reached its end; interrupted: the signal stopped it (the checkpoints hold where). */
  state: "complete" | "interrupted";
}

/**
 * The backfill command's walk, checkpointed per kind in PostgreSQL after every page. A run goes
 * on where a stopped one (Ctrl-C, a crash) left off: an unfinished kind resumes at its saved
 * page, a kind that run finished is not read again. Once every asked kind has completed, the next
 * run starts fresh (a backfill is asked for to re-read); `restart` forces that, and so does a
 * different `since`. Runs in the `full` budget class.
 */
export async function runBackfill(options: BackfillOptions): Promise<BackfillOutcome> {
  const since = options.since ?? null;
  const saved = await Promise.all(options.kinds.map((k) => options.checkpoints.get("backfill", k)));
  // A stopped run of the same window goes on; once every asked kind completed, a new run starts fresh.
  const goesOn = options.restart !== true && !saved.every((cp) => cp?.since === since && cp.passCompletedAt !== null);
  const totals = Object.fromEntries(SYNCED_KINDS.map((k) => [k, 0])) as Record<SyncedKind, number>;
  // Every kind this run will walk is started now, not when the walk reaches it: the full tier
  // sees the whole run as running and leaves each of its kinds to it (first-import.ts backfillWalking).
  const state = await readImportState(options);
  const plan: { kind: SyncedKind; checkpoint: SyncCheckpoint; resumed: boolean; skipped: boolean }[] = [];
  for (const [i, kind] of options.kinds.entries()) {
    const cp = saved[i];
    if (goesOn && cp?.since === since)
      plan.push({ kind, checkpoint: cp, resumed: cp.passCompletedAt === null, skipped: cp.passCompletedAt !== null });
    else {
      const checkpoint = await options.checkpoints.start("backfill", kind, {
        firstImport: await state.walkImports(kind, since),
        since,
      });
      plan.push({ kind, checkpoint, resumed: false, skipped: false });
    }
  }
  for (const { kind, checkpoint, resumed, skipped } of plan) {
    if (options.signal?.aborted) return { totals, state: "interrupted" };
    if (skipped) {
      options.onProgress?.({ kind, checkpoint, records: 0, resumed: false, skipped: true, done: true });
      continue;
    }
    options.onProgress?.({ kind, checkpoint, records: 0, resumed, skipped: false, done: false });
    const { writer } = options;
    const walked = await walkList({
      ...options,
      kind,
      checkpoint,
      changes: writer && { writer, source: "backfill" },
      onPage(at, page) {
        totals[kind] += page.records;
        options.onProgress?.({ kind, checkpoint: at, records: totals[kind], resumed, skipped: false, done: at.passCompletedAt !== null });
      },
    });
    if (walked.state === "lost") throw new BackfillConflictError(kind);
    // The checkpoint stays at the last good page: a run after the upstream is fixed goes on from there.
    if (walked.error) throw walked.error;
    if (walked.state !== "complete") return { totals, state: "interrupted" };
  }
  return { totals, state: "complete" };
}

/** Another backfill saved the same kind's pass first: two runs at once would interleave. */
export class BackfillConflictError extends codedError("backfill_conflict") {
  constructor(readonly kind: SyncedKind) {
    super(`another backfill is walking ${kind} at the same time: stopped this one (its pages are saved)`);
  }
}
