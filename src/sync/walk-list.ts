import type { Logger } from "pino";
import type { CheckpointProgress, SyncCheckpoint } from "../mirror/sync-checkpoints.js";
import { UpstreamBadRequestError, UpstreamPageRefusedError } from "../upstream/errors.js";
import { readList } from "../upstream/paginate.js";
import { sweepWriting, type SweepChanges } from "./first-import.js";
import { RESOURCES, walkOf, writePage, type SweepDeps } from "./resources.js";
import type { SyncedKind } from "../mirror/kinds.js";

export interface WalkOptions extends SweepDeps {
  kind: SyncedKind;
  /** A running pass (checkpoints.start, or one found unfinished). */
  checkpoint: SyncCheckpoint;
  /** Without it, writes emit no change events (backfill --no-changes). */
  changes?: SweepChanges;
  /** A slice's bound: pages to read at most. @defaultValue Infinity (the page cap alone) */
  maxPages?: number;
  /** The page cap of the pass (tests make it small). @defaultValue MAX_WALK_PAGES (upstream/paginate.ts) */
  pageCap?: number;
  /**
   * Stops before the next page once aborted (Ctrl-C); the page in hand is written and saved first,
   * a read still waiting (the budget, the answer) ends at once.
   */
  signal?: AbortSignal;
  /** Asked before each page is handled: false pauses the walk there (the full tier's pass, once a backfill walks its kind). */
  goOn?: () => Promise<boolean>;
  logger?: Logger;
  onPage?: (checkpoint: SyncCheckpoint, page: { records: number }) => void;
}

export interface WalkOutcome {
  /** Where the pass stands: after the last page written and saved. */
  checkpoint: SyncCheckpoint;
  /** Pages read by this walk (not the whole pass). */
  pages: number;
  /** complete: reached the end; paused: bound, abort or `goOn`; lost: another walker of the same pass saved first. */
  state: "complete" | "paused" | "lost" | "unreadable";
  /**
   * Unreadable: the API's answer at the checkpoint's cursor can never be walked on from (too
   * large, more records than asked for, a cursor the walk was already handed, a pass past the
   * page cap): the checkpoint
   * stays at the last good page, and the caller decides what becomes of the pass. Other failures
   * (a 5xx, a body that is not JSON: a proxy's page during a deploy) are thrown, and the next run
   * goes on from the checkpoint.
   */
  error?: UpstreamPageRefusedError;
}

/**
 * Walks one kind's whole list from the checkpoint's cursor in the `full` budget class (a list
 * with a date filter from `since`), writing each page into the mirror and saving the position
 * after it, so a crash or Ctrl-C costs at most the page in flight. The list reader
 * (upstream/paginate.ts) pages and stops it; the pass's pages so far count against its page cap,
 * so a pass over slices or runs is bounded too. A cursor the upstream refuses (400) starts the
 * kind's pass again from the top, once per walk: cursors may expire, and the mirror's guarded
 * upsert makes re-reading harmless. A cursor the walk was already handed (an upstream stuck on a
 * page, or cycling) or a pass past the page cap ends it as `unreadable`.
 */
export async function walkList(options: WalkOptions): Promise<WalkOutcome> {
  const { checkpoints, kind } = options;
  const at = { checkpoint: options.checkpoint, pages: 0 };
  for (let restarted = false; ; restarted = true) {
    try {
      return await walkFrom(options, at);
    } catch (err) {
      // Stopped while the read waited: nothing of it is in hand, the checkpoint is where it was.
      if (options.signal?.aborted) return { checkpoint: at.checkpoint, pages: at.pages, state: "paused" };
      if (err instanceof UpstreamPageRefusedError) return { checkpoint: at.checkpoint, pages: at.pages, state: "unreadable", error: err };
      if (!(err instanceof UpstreamBadRequestError) || at.checkpoint.cursor === null || restarted) throw err;
      options.logger?.warn(
        { kind, tier: at.checkpoint.tier, err: err.message },
        "the upstream refused the saved cursor: the pass starts again",
      );
      const { tier, firstImport, since } = at.checkpoint;
      at.checkpoint = await checkpoints.start(tier, kind, { firstImport, since });
    }
  }
}

/** One walk from `at.checkpoint` through the list reader, saving after every page; `at` follows it (what a restart starts from). */
async function walkFrom(options: WalkOptions, at: { checkpoint: SyncCheckpoint; pages: number }): Promise<WalkOutcome> {
  const { checkpoints, kind } = options;
  const { sortKey, filters } = RESOURCES[kind];
  const start = at.checkpoint;
  const byFilter = filters.includes("from");
  const from = byFilter ? (start.since ?? undefined) : undefined;
  // backfill --since for a list the API cannot filter by date (orders): the records on or after
  // `since` by sort key, and the walk ends once the list shows it runs newest first and went below
  // it. A list that runs oldest first, or in no order (menus: no sort key), is walked to its end.
  const floor = start.since !== null && !byFilter ? Date.parse(start.since) : undefined;
  const walked = await readList(
    {
      ...walkOf(options, kind, { from }, "full"),
      cursor: start.cursor ?? undefined,
      pagesBefore: start.pages,
      // The pass's cycle guard as its last slice left it: a cycle longer than a slice is caught too.
      ...(start.guard ? { guard: start.guard } : {}),
      maxPages: (options.maxPages ?? Number.POSITIVE_INFINITY) - at.pages,
      floor,
      goOn: options.goOn,
      signal: options.signal,
      cap: options.pageCap,
      readAhead: true,
    },
    async (page, { last, error, guard }) => {
      at.pages++;
      const kept = floor === undefined ? page : { ...page, data: page.data.filter((r) => !(sortKey(r) < floor)) };
      const { writer, source } = await sweepWriting(options.changes, kind, kept, at.checkpoint.firstImport);
      await writePage(options.mirror, writer, kind, kept, source);
      // The page was written; past a cycle or the cap the checkpoint stays at the last good cursor.
      if (error) return {};
      // Records read, those the client set aside as out of shape included (the checkpoint counts them too).
      const read = { records: kept.data.length + kept.refused.length };
      const cp = at.checkpoint;
      const progress: CheckpointProgress = {
        cursor: page.nextCursor,
        records: cp.records + read.records,
        pages: cp.pages + 1,
        guard,
      };
      const saved = last ? await checkpoints.complete(cp, progress) : (await checkpoints.advance(cp, progress)) && { ...cp, ...progress };
      // Another walker of the same pass saved first.
      if (!saved) return { stop: true };
      at.checkpoint = saved;
      options.onPage?.(saved, read);
      return {};
    },
  );
  if (walked.end === "stopped") return { checkpoint: at.checkpoint, pages: at.pages, state: "lost" };
  if (walked.error) return { checkpoint: at.checkpoint, pages: at.pages, state: "unreadable", error: walked.error };
  const complete = walked.end === "end" || walked.end === "floor";
  return { checkpoint: at.checkpoint, pages: at.pages, state: complete ? "complete" : "paused" };
}
