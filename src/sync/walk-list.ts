import type { Logger } from "pino";
import type { MirrorStore } from "../mirror/mirror-store.js";
import type { CheckpointProgress, SyncCheckpoint, SyncCheckpoints } from "../mirror/sync-checkpoints.js";
import { createCursorGuard, UpstreamBadRequestError, UpstreamPageRefusedError, type ApiClient } from "../upstream/index.js";
import { sweepSource, writePage, type SweepChanges } from "./change-source.js";
import { createListOrder, type ListOrder } from "./list-order.js";
import { readPage, RESOURCES, type Page, type SyncedKind } from "./resources.js";

export interface WalkOptions {
  api: ApiClient;
  mirror: MirrorStore;
  checkpoints: SyncCheckpoints;
  kind: SyncedKind;
  /** A running pass (checkpoints.start, or one found unfinished). */
  checkpoint: SyncCheckpoint;
  /** Without it, writes emit no change events (backfill --no-changes). */
  changes?: SweepChanges;
  /** A slice's bound: pages to read at most. @defaultValue Infinity */
  maxPages?: number;
  /** Stops before the next page once aborted (Ctrl-C); the page in hand is written and saved first. */
  signal?: AbortSignal;
  /** Asked before each page: false pauses the walk there (the full tier's pass, once a backfill walks its kind). */
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
   * large, more records than asked for, a cursor the walk was already handed): the checkpoint
   * stays at the last good page, and the caller decides what becomes of the pass. Other failures
   * (a 5xx, a body that is not JSON: a proxy's page during a deploy) are thrown, and the next run
   * goes on from the checkpoint.
   */
  error?: UpstreamPageRefusedError;
}

/**
 * Walks one kind's whole list from the checkpoint's cursor in the `full` budget class (a list
 * with a date filter from `since`), writing each page into the mirror and saving the position after it, so a crash or Ctrl-C costs at most the page in flight. A
 * cursor the upstream refuses (400) starts the kind's pass again from the top, once per walk:
 * cursors may expire, and the mirror's guarded upsert makes re-reading harmless. A cursor the walk
 * was already handed (an upstream stuck on a page, or cycling) ends it as `unreadable`.
 */
export async function walkList(options: WalkOptions): Promise<WalkOutcome> {
  const { checkpoints, kind } = options;
  const maxPages = options.maxPages ?? Number.POSITIVE_INFINITY;
  let checkpoint = options.checkpoint;
  let pages = 0;
  let restarted = false;
  let order = createListOrder();
  let cursors = createCursorGuard(checkpoint.cursor ?? undefined);
  const byFilter = RESOURCES[kind].filters.includes("from");
  while (pages < maxPages && !options.signal?.aborted) {
    if (options.goOn && !(await options.goOn())) break;
    let page: Page;
    try {
      const from = byFilter ? (checkpoint.since ?? undefined) : undefined;
      page = await readPage(options, kind, { cursor: checkpoint.cursor ?? undefined, from }, "full");
    } catch (err) {
      if (err instanceof UpstreamPageRefusedError) return { checkpoint, pages, state: "unreadable", error: err };
      if (!(err instanceof UpstreamBadRequestError) || checkpoint.cursor === null || restarted) throw err;
      options.logger?.warn(
        { kind, tier: checkpoint.tier, err: err.message },
        "the upstream refused the saved cursor: the pass starts again",
      );
      restarted = true;
      order = createListOrder();
      cursors = createCursorGuard();
      checkpoint = await checkpoints.start(checkpoint.tier, kind, { firstImport: checkpoint.firstImport, since: checkpoint.since });
      continue;
    }
    pages++;
    const cut = checkpoint.since !== null && !byFilter ? cutBySortKey(kind, page, checkpoint.since, order) : { page, past: false };
    const source = options.changes ? await sweepSource(options.changes, kind, cut.page, checkpoint.firstImport) : "backfill";
    await writePage(options.mirror, options.changes?.writer, kind, cut.page, source);
    // Records read, those the client set aside as out of shape included (the checkpoint counts them too).
    const read = { records: cut.page.data.length + cut.page.refused.length };
    const progress: CheckpointProgress = {
      cursor: page.nextCursor,
      records: checkpoint.records + read.records,
      pages: checkpoint.pages + 1,
    };
    if (page.nextCursor === null || cut.past) {
      const done = await checkpoints.complete(checkpoint, progress);
      if (!done) return { checkpoint, pages, state: "lost" };
      options.onPage?.(done, read);
      return { checkpoint: done, pages, state: "complete" };
    }
    try {
      cursors.next(page.nextCursor, pages);
    } catch (err) {
      if (!(err instanceof UpstreamPageRefusedError)) throw err;
      // The page was written; the checkpoint stays at its cursor, the last one that was good.
      return { checkpoint, pages, state: "unreadable", error: err };
    }
    if (!(await checkpoints.advance(checkpoint, progress))) return { checkpoint, pages, state: "lost" };
    checkpoint = { ...checkpoint, ...progress };
    options.onPage?.(checkpoint, read);
  }
  return { checkpoint, pages, state: "paused" };
}

/**
 * backfill --since for a list the API cannot filter by date (orders): keeps the records on or
 * after `since` by sort key, and says the walk is past the window once the data shows the list
 * runs newest first and this page went below `since`. Never assumes an order: a list that runs
 * oldest first, or no order at all (menus: no sort key, kept whole), is walked to its end.
 */
function cutBySortKey(kind: SyncedKind, page: Page, since: string, order: ListOrder): { page: Page; past: boolean } {
  const bound = Date.parse(since);
  const { sortKey } = RESOURCES[kind];
  order.observe(page.data.map(sortKey));
  const kept = page.data.filter((r) => !(sortKey(r) < bound));
  return { page: { ...page, data: kept }, past: order.direction === "descending" && order.passed(bound) };
}
