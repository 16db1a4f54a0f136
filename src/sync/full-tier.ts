import type { Logger } from "pino";
import type { SyncCheckpoint } from "../mirror/sync-checkpoints.js";
import { readImportState, type SweepChanges } from "./first-import.js";
import { SYNCED_KINDS, type SweepDeps } from "./resources.js";
import type { SyncedKind } from "../mirror/kinds.js";
import { walkList, type WalkOutcome } from "./walk-list.js";

export interface FullSliceOptions extends SweepDeps {
  /** Writes with change events: `reconcile` unless an event already asked (pending), `backfill` on a first import. */
  changes: SweepChanges;
  /** A kind's new pass starts this long after its previous pass started, once that one completed. */
  intervalMs: number;
  /** Pages this slice reads at most, over all kinds. */
  maxPages: number;
  /** Start a pass now for every kind not running one (an operator's request), whatever the interval says. */
  force?: boolean;
  logger?: Logger;
}

export interface FullSliceOutcome {
  pages: number;
  /** Each kind's checkpoint after the slice (kinds not due, or walked by a backfill now, are absent). */
  kinds: Partial<Record<SyncedKind, { state: WalkOutcome["state"]; checkpoint: SyncCheckpoint }>>;
}

/**
 * One bounded slice of the full reconciliation tier: continues each kind's unfinished pass from
 * its checkpoint, or starts the pass that is due, and reads at most `maxPages` pages (class
 * `full`) before it ends, saving after every page. Run again and again, the slices walk a history
 * of any size to its end on what the classes above leave of the budget.
 */
export async function runFullSlice(options: FullSliceOptions): Promise<FullSliceOutcome> {
  const outcome: FullSliceOutcome = { pages: 0, kinds: {} };
  // Forced: every kind's pass starts now, not only the kinds this slice's pages reach (the slices
  // after it are not forced, and a kind a whole backfill covered would not be due yet).
  if (options.force) for (const kind of SYNCED_KINDS) await runningOrDuePass(options, kind);
  for (const kind of SYNCED_KINDS) {
    const left = options.maxPages - outcome.pages;
    if (left <= 0) break;
    const checkpoint = await runningOrDuePass(options, kind);
    if (!checkpoint) continue;
    const { checkpoints, mirror } = options;
    const walked = await walkList({
      ...options,
      kind,
      checkpoint,
      maxPages: left,
      // A backfill of the whole list that starts meanwhile takes the kind over (runningOrDuePass):
      // the slice stops before its next page instead of reading what the backfill reads again.
      goOn: async () => !(await readImportState({ checkpoints, mirror })).backfillWalking(kind),
    });
    outcome.pages += walked.pages;
    outcome.kinds[kind] = { state: walked.state, checkpoint: walked.checkpoint };
    if (walked.state === "complete")
      options.logger?.info(
        { kind, records: walked.checkpoint.records, pages: walked.checkpoint.pages },
        "full reconciliation pass complete",
      );
    if (walked.error) await giveUpPass(options, walked.checkpoint, walked.error);
    // Another slice holds this pass: leave the rest of the work to it.
    if (walked.state === "lost") break;
  }
  return outcome;
}

/**
 * The kind's unfinished pass, or a new one when it is due (never before the previous one ended).
 * Neither while a backfill walks the kind's whole list: that backfill is the pass (its completion
 * counts as one, `passDue`), and two walkers of one list would read it twice at once.
 */
async function runningOrDuePass(options: FullSliceOptions, kind: SyncedKind): Promise<SyncCheckpoint | undefined> {
  const { checkpoints } = options;
  let state = await readImportState(options);
  if (state.backfillWalking(kind)) return undefined;
  const [current, backfill] = [state.full(kind), state.backfill(kind)];
  if (current?.passCompletedAt === null) {
    const covered = backfill?.since === null && backfill.passCompletedAt !== null && backfill.passStartedAt >= current.passStartedAt;
    if (!covered) return current;
    // A backfill read the whole list after this pass began: reading the rest again is waste.
    await checkpoints.giveUp(current);
    options.logger?.info({ kind }, "full reconciliation pass ended: a backfill of the whole list read it since it began");
    state = await readImportState(options);
  }
  if (!options.force && !state.passDue(kind, options.intervalMs)) return undefined;
  return checkpoints.start("full", kind, { firstImport: await state.walkImports(kind) });
}

/**
 * A page the API can never answer readably: the pass ends there, said once at error level, rather
 * than resume at that page and fail every minute. Its last complete pass stays as it was (the
 * metric and alerts see no new one); the next pass starts when one is due after this one's start.
 */
async function giveUpPass(options: FullSliceOptions, checkpoint: SyncCheckpoint, error: Error): Promise<void> {
  await options.checkpoints.giveUp(checkpoint);
  options.logger?.error(
    { kind: checkpoint.kind, pages: checkpoint.pages, records: checkpoint.records, err: error.message },
    "full reconciliation pass given up: the API's answer at its next page cannot be walked on from",
  );
}
