import type { Logger } from "pino";
import type { MirrorStore } from "../mirror/mirror-store.js";
import type { SyncCheckpoint, SyncCheckpoints } from "../mirror/sync-checkpoints.js";
import type { ApiClient } from "../upstream/client.js";
import { isFirstImport, type SweepChanges } from "./change-source.js";
import { SYNCED_KINDS, type SyncedKind } from "./resources.js";
import { walkList, type WalkOutcome } from "./walk-list.js";

export interface FullSliceOptions {
  api: ApiClient;
  mirror: MirrorStore;
  checkpoints: SyncCheckpoints;
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
 * A backfill of a kind's whole list counts as running while its checkpoint, unfinished, was saved
 * this recently. A running one saves a page every few seconds, and its longest wait is a 429's
 * Retry-After (honoured up to 5 min, upstream/client.ts); one that crashed or was stopped saves no
 * more, and so holds the full tier back no longer than this.
 */
export const BACKFILL_ALIVE_MS = 10 * 60_000;

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
      goOn: async () => !backfillRunning(await checkpoints.list("backfill"), kind, (await mirror.clock()).getTime()),
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
  const [current, backfills] = await Promise.all([checkpoints.get("full", kind), checkpoints.list("backfill")]);
  const backfill = backfills.find((b) => b.kind === kind);
  const now = (await options.mirror.clock()).getTime();
  if (backfillRunning(backfills, kind, now)) return undefined;
  let ended = current;
  if (current?.passCompletedAt === null) {
    const covered = backfill?.since === null && backfill.passCompletedAt !== null && backfill.passStartedAt >= current.passStartedAt;
    if (!covered) return current;
    // A backfill read the whole list after this pass began: reading the rest again is waste.
    ended = (await checkpoints.giveUp(current)) ?? current;
    options.logger?.info({ kind }, "full reconciliation pass ended: a backfill of the whole list read it since it began");
  }
  if (!options.force && !passDue(ended, backfill, now, options.intervalMs)) return undefined;
  return checkpoints.start("full", kind, { firstImport: await isFirstImport(options, kind) });
}

/**
 * Whether a backfill of the whole list (no `--since`) is walking `kind` now or will in this run:
 * the kind's checkpoint unfinished, and the run alive (runAlive).
 */
export function backfillRunning(backfills: readonly SyncCheckpoint[], kind: string, now: number): boolean {
  const own = backfills.find((b) => b.kind === kind);
  if (own?.since !== null || own.passCompletedAt !== null) return false;
  return runAlive(runOf(backfills, own), now);
}

/**
 * Whether `kind` is left to a first import: a whole-list backfill run holding it goes on (a kind
 * unfinished, the run alive), and no whole-list walk of the kind had completed before that run
 * began, so the mirror never held the whole list, whatever an active pass or refresh wrote into it.
 * The active tier leaves such a kind to the run until the run ends (its completed kinds too: one
 * import) or stops saving.
 */
export async function firstImportRunning(checkpoints: SyncCheckpoints, kind: SyncedKind, now: number): Promise<boolean> {
  const backfills = await checkpoints.list("backfill");
  const own = backfills.find((b) => b.kind === kind);
  if (own?.since !== null) return false;
  const run = runOf(backfills, own);
  if (!run.some((b) => b.passCompletedAt === null) || !runAlive(run, now)) return false;
  // Read only while a run goes on: the active tier asks before every page, and mostly none does.
  const full = await checkpoints.get("full", kind);
  const began = own.passStartedAt.getTime();
  return ![full, own].some((c) => c?.lastCompleteAt && c.lastCompleteAt.getTime() < began);
}

/**
 * The whole-list backfill run `own` belongs to: a run starts every kind's checkpoint at once, then
 * walks them in turn, so its checkpoints began within BACKFILL_ALIVE_MS of each other.
 */
const runOf = (backfills: readonly SyncCheckpoint[], own: SyncCheckpoint) =>
  backfills.filter((b) => b.since === null && Math.abs(b.passStartedAt.getTime() - own.passStartedAt.getTime()) <= BACKFILL_ALIVE_MS);

/** A run is alive while one of its kinds saved within BACKFILL_ALIVE_MS. */
const runAlive = (run: readonly SyncCheckpoint[], now: number) => run.some((b) => now - b.updatedAt.getTime() < BACKFILL_ALIVE_MS);

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

/**
 * Whether a kind's next walk of its whole list is due: `intervalMs` after the last one started —
 * its last full pass (complete, or given up at a page it could not read), or a backfill of the
 * whole list (no `--since`) that completed later: it read the same pages, so a service started
 * after its first import does not read the history again at once. Due at once when none has ended.
 */
export function passDue(full: SyncCheckpoint | undefined, backfill: SyncCheckpoint | undefined, now: number, intervalMs: number): boolean {
  const starts = [full, backfill]
    .filter((c): c is SyncCheckpoint => c !== undefined && c.passCompletedAt !== null && (c.tier === "full" || c.since === null))
    .map((c) => c.passStartedAt.getTime());
  return starts.length === 0 || now >= Math.max(...starts) + intervalMs;
}
