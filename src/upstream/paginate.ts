import { createHash } from "node:crypto";
import { UpstreamPageRefusedError } from "./errors.js";
import type { Page } from "./models.js";

// The one list reader: how every walk of a cursor-paginated list pages, when it stops, how far it
// may go and how a list that never ends is caught. The webhook refresh, both reconciliation tiers,
// the backfill and the client's `iterate` all page through here.

/**
 * Pages one walk of a list reads at most, counting the pages a resumed walk read before (a
 * backfill's or a full pass's checkpoint, a refresh read that goes on where the last job stopped):
 * 10 million records at the API's 100 a page. A walk that reaches it fails like a cycle: no list
 * this service reads is that long, so it is one that never ends.
 */
const MAX_WALK_PAGES = 100_000;

/** The order a list came in, read off its records: the spec states none, so it is never assumed. */
export type ListDirection = "descending" | "ascending" | "unknown";

/**
 * Watches the sort keys (epoch ms: an order's `createdAt`, a booking's `date`) of a list as its
 * pages arrive and says which way it runs. Equal neighbours say nothing; one step against the
 * direction seen makes it `unknown` for good (the list is in no order a read can stop early by).
 */
export interface ListOrder {
  /** Feeds the keys of the next page, in list order; a key that does not parse (NaN) is skipped. */
  observe(keys: readonly number[]): void;
  readonly direction: ListDirection;
  /**
   * Whether a record with `key` can no longer come further down this list: the list runs
   * newest first and already went below it, or oldest first and already went above it.
   */
  passed(key: number): boolean;
}

export function createListOrder(): ListOrder {
  let last: number | undefined;
  let down = false;
  let up = false;
  return {
    observe(keys) {
      for (const key of keys) {
        if (Number.isNaN(key)) continue;
        if (last !== undefined && key < last) down = true;
        if (last !== undefined && key > last) up = true;
        last = key;
      }
    },
    get direction(): ListDirection {
      if (down && !up) return "descending";
      if (up && !down) return "ascending";
      return "unknown";
    },
    passed(key) {
      if (last === undefined || Number.isNaN(key)) return false;
      const direction = this.direction;
      return (direction === "descending" && last < key) || (direction === "ascending" && last > key);
    },
  };
}

/**
 * The cycle guard's memory across the calls of one walk (a full pass's slices, each reading from
 * the checkpoint the last one saved): Brent's detector, O(1) whatever the walk's length. `mark`
 * is the digest of a cursor the walk was handed (null: none yet), moved to the cursor in hand
 * each time `steps` reaches `power`, which then doubles; a cursor equal to the mark is a cycle.
 * It catches a cycle of length λ starting after μ pages within about μ + 2λ pages of it.
 */
export interface CursorCycleGuard {
  mark: string | null;
  power: number;
  steps: number;
}

/** A cursor's ~16-byte digest: what the guards keep, whatever the cursor's size. */
const cursorDigest = (cursor: string) => createHash("sha256").update(cursor).digest("base64").slice(0, 22);

/**
 * The bounds of one walk: the page cap and the cycle guard. Within one call the guard keeps a
 * digest of every cursor the call was handed and fails on the first one handed again, so a cycle
 * of any length is caught exactly (its memory bounded because the call is: by its budget, or
 * `cap` digests of 16 bytes each). Across the calls of a walk that goes on from a saved position
 * (`guard`, carried in the checkpoint) Brent's detector keeps O(1): a cycle longer than one call
 * is caught within about twice its length (`CursorCycleGuard`), never left to the page cap.
 */
function createWalkBounds(options: { start?: string; pagesBefore?: number; cap?: number; guard?: CursorCycleGuard } = {}) {
  const cap = options.cap ?? MAX_WALK_PAGES;
  const seen = new Set<string>(options.start === undefined ? [] : [cursorDigest(options.start)]);
  const brent: CursorCycleGuard = options.guard
    ? { ...options.guard }
    : { mark: options.start === undefined ? null : cursorDigest(options.start), power: 1, steps: 0 };
  let pages = options.pagesBefore ?? 0;
  const repeated = () =>
    new UpstreamPageRefusedError(`the API handed back the same cursor again after ${pages} page(s): stopped a list that would never end`, {
      code: "repeated_cursor",
    });
  return {
    /**
     * Counts the page just read and takes the cursor it handed back (null: the list ended). The
     * error that ends the walk, if one does: code `repeated_cursor` for a cursor this walk was
     * handed already, `page_cap` once the walk read `cap` pages and the list goes on.
     */
    next(cursor: string | null): UpstreamPageRefusedError | undefined {
      pages++;
      if (cursor === null) return undefined;
      const key = cursorDigest(cursor);
      if (seen.has(key) || brent.mark === key) return repeated();
      seen.add(key);
      if (brent.mark === null || ++brent.steps >= brent.power) {
        if (brent.mark !== null) brent.power *= 2;
        brent.mark = key;
        brent.steps = 0;
      }
      const capped = `the list went on past ${cap} pages, the most one walk reads: stopped a list that would never end`;
      if (pages >= cap) return new UpstreamPageRefusedError(capped, { code: "page_cap" });
      return undefined;
    },
    /** The guard as of the last page taken: saved with that page's position, for the walk's next call. */
    guard(): CursorCycleGuard {
      return { ...brent };
    },
  };
}

/**
 * Every page of a cursor-paginated list, in order, fetching the next page only when the caller
 * has consumed the previous one (a caller that stops early sends nothing more). Starts at
 * `cursor` when given. `fetchPage` may return more than `{ data, nextCursor }` (e.g. when it read
 * the page); the page is yielded as returned. A cursor the API has already handed back, or a walk
 * past the page cap, fails the walk after the page that named it (`createWalkBounds`).
 */
export async function* paginatePages<P extends { nextCursor: string | null }>(
  fetchPage: (cursor: string | undefined) => Promise<P>,
  cursor?: string,
): AsyncGenerator<P, void, undefined> {
  const bounds = createWalkBounds({ start: cursor });
  for (;;) {
    const page = await fetchPage(cursor);
    yield page;
    const error = bounds.next(page.nextCursor);
    if (error) throw error;
    if (page.nextCursor === null) return;
    cursor = page.nextCursor;
  }
}

/** Every item of a cursor-paginated list, through `paginatePages` (same bounds). */
export async function* paginate<T>(
  fetchPage: (cursor: string | undefined) => Promise<Page<T>>,
  cursor?: string,
): AsyncGenerator<T, void, undefined> {
  for await (const page of paginatePages(fetchPage, cursor)) yield* page.data;
}

/** One walk of a list, for `readList`. */
export interface ListWalk<P extends { data: readonly { id: string }[]; nextCursor: string | null }> {
  /** One page at `cursor` (undefined: the top of the list). */
  fetchPage: (cursor: string | undefined) => Promise<P>;
  /** Where the records of a page sit in the list's sort order (epoch ms; NaN: none). */
  sortKey: (record: P["data"][number]) => number;
  /** Where to start (a saved cursor); the top of the list when absent. */
  cursor?: string;
  /** Pages an earlier run of this same walk read (counted against the cap). */
  pagesBefore?: number;
  /** The cycle guard an earlier run of this same walk left (`PageAt.guard`, saved with `cursor`). */
  guard?: CursorCycleGuard;
  /**
   * Pages this call reads at most before it stops with `budget` (the rest is a later call's, from
   * `cursor`); a function is asked after every page with the order seen so far. Never past the
   * page cap. @defaultValue no budget: the cap alone
   */
  maxPages?: number | ((order: ListOrder) => number);
  /**
   * The records looked for, by id with their sort key where known: settled once each was seen
   * or the list's order shows it can no longer come. With neither `targets` nor `floor`: the
   * whole list; with both, the walk ends (`settled`) once both hold.
   */
  targets?: ReadonlyMap<string, number | undefined>;
  /** Every record at or above this sort key is wanted: passed once a list known to run newest first went below it. */
  floor?: number;
  /**
   * Asked before each page is handled: false pauses the walk there (`paused`), dropping a whole
   * list's next page if it was already asked for.
   */
  goOn?: () => Promise<boolean>;
  signal?: AbortSignal;
  /** The page cap (tests make it small). @defaultValue MAX_WALK_PAGES */
  cap?: number;
  /**
   * Asks for the next page while the page in hand is handled, so a page's write overlaps the
   * budget's wait for the next call instead of adding to it: for long walks of a whole list
   * (backfill, the full tier). A walk that then ends anyway (`goOn`, `stop`, a throw) drops that
   * page unread: one call spent, nothing written past where the walk stopped.
   */
  readAhead?: boolean;
}

/** Why a walk ended: the list's end, its stop rules, its budget, a pause, or a list that never ends (`error`). */
export type WalkEnd = "end" | "settled" | "floor" | "budget" | "paused" | "stopped" | "unreadable";

export interface WalkResult {
  end: WalkEnd;
  /** Pages this call read. */
  pages: number;
  /** The cursor after the last page read: where a later call goes on (null at the list's end). */
  cursor: string | null;
  /** With `unreadable`: a cursor handed back again, or the page cap (the page that showed it was passed to `onPage`). */
  error?: UpstreamPageRefusedError;
  /** With `targets`: every id the walk met (by `onPage`'s ids too), targets or not; empty otherwise. */
  seen: Set<string>;
  order: ListOrder;
}

/** What `onPage` learns of the page before it handles it. */
export interface PageAt {
  /** The walk ends after this page whatever `onPage` does: the list ended, the floor was passed, or `error`. */
  last: boolean;
  error?: UpstreamPageRefusedError;
  /** The cycle guard after this page: what a walk going on from its cursor later starts with. */
  guard: CursorCycleGuard;
}

/** What `onPage` did with a page: ids it settled besides the page's records, or `stop` to end the walk. */
export interface PageHandled {
  settled?: Iterable<string>;
  stop?: boolean;
}

/**
 * Walks a list by its stop rules, the same for every reader: the list's end; every target seen
 * or passed (by the list's order, read off the data, never assumed); a floor passed; the budget;
 * `goOn` or the signal; the page cap and the cycle guard (`createWalkBounds`). `onPage` handles
 * each page (writes it) and may return ids it settled besides the page's records (records set
 * aside), or `stop` to end the walk after it (`stopped`: another walker saved first).
 */
export async function readList<P extends { data: readonly { id: string }[]; nextCursor: string | null }>(
  walk: ListWalk<P>,
  onPage: (page: P, at: PageAt) => Promise<PageHandled>,
): Promise<WalkResult> {
  const bounds = createWalkBounds({ start: walk.cursor, pagesBefore: walk.pagesBefore, cap: walk.cap, guard: walk.guard });
  const order = createListOrder();
  const result: WalkResult = { end: "paused", pages: 0, cursor: walk.cursor ?? null, seen: new Set(), order };
  const settled = () => {
    if (!walk.targets) return false;
    for (const [id, key] of walk.targets) if (!result.seen.has(id) && (key === undefined || !order.passed(key))) return false;
    return true;
  };
  const belowFloor = () => walk.floor !== undefined && order.direction === "descending" && order.passed(walk.floor);
  // The next page, asked for while this one is handled (`readAhead`).
  let next: Promise<P> | undefined;
  while (!walk.signal?.aborted) {
    if (walk.goOn && !(await walk.goOn())) return result;
    const page = await (next ?? walk.fetchPage(result.cursor ?? undefined));
    next = undefined;
    result.pages++;
    order.observe(page.data.map(walk.sortKey));
    const error = bounds.next(page.nextCursor);
    // A floor alone ends the walk before `onPage` hears of the page (a pass completes with it).
    const floor = !walk.targets && belowFloor();
    const last = page.nextCursor === null || floor || error !== undefined;
    const budget = typeof walk.maxPages === "function" ? walk.maxPages(order) : (walk.maxPages ?? Number.POSITIVE_INFINITY);
    if (walk.readAhead && !last && result.pages < budget) {
      next = walk.fetchPage(page.nextCursor ?? undefined);
      next.catch(() => undefined);
    }
    const handled = await onPage(page, { last, guard: bounds.guard(), ...(error ? { error } : {}) });
    // Only a targeted walk notes ids: it is bounded by its budget, a whole list's walk is not.
    if (walk.targets) for (const id of [...page.data.map((r) => r.id), ...(handled.settled ?? [])]) result.seen.add(id);
    if (error) return { ...result, end: "unreadable", error };
    if (handled.stop) return { ...result, end: "stopped" };
    result.cursor = page.nextCursor;
    if (page.nextCursor === null) return { ...result, end: "end" };
    if (floor) return { ...result, end: "floor" };
    if (walk.targets && settled() && (walk.floor === undefined || belowFloor())) return { ...result, end: "settled" };
    if (result.pages >= budget) return { ...result, end: "budget" };
  }
  return result;
}
