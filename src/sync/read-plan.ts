import { DAY_MS, dayOf, FILTER_NAMES, PAGE_SIZE, RESOURCES, type ReadFilter } from "./resources.js";
import type { SyncedKind } from "../mirror/kinds.js";

// The read planner: pure functions from the ids waiting for a refresh to the next list read, as
// values (`PlannedRead`), tested without HTTP. The executor that spends the budget is
// refresh-kind.ts.

/** One id being looked for, and the reads that may list it, narrowest first. */
export interface Target {
  id: string;
  restaurantId: string;
  /** Where the record sits in its list's sort order (epoch ms): an order's createdAt, a booking's date. */
  sortKey?: number;
  candidates: readonly ReadFilter[];
  /** The candidate to try next; `candidates.length` when every one was tried this round. */
  next: number;
  /** Where a read of its next candidate stopped at its page budget: the next read of it goes on from there. */
  resume?: ResumePoint;
  /**
   * orders: the orders the mirror holds newer than it (company-wide, in its restaurant), counted up
   * to RECENT_REACH: under it, the first page of the unfiltered newest-first list likely holds it,
   * whatever its status now.
   */
  recent?: { company: number; restaurant: number };
  /** The first-page bet was made for it this round (and missed). */
  recentTried?: boolean;
  /**
   * orders: its `Depth` in the list each candidate filter reads (by `filterKey`, counted up to
   * DEPTH_REACH): what the planner prices a read by. Absent: the read is chosen without a price.
   */
  depth?: Record<string, Depth>;
}

/** Orders newer than a target in one filtered list, company-wide and in its restaurant. */
export interface Depth {
  company: number;
  restaurant: number;
}

export interface PlannedRead {
  /** Absent: company-wide (the ids span several restaurants). */
  restaurantId?: string;
  filter: ReadFilter;
  /** The ids this read is for (others it meets on the way are settled too). */
  targets: Target[];
  /** The first page of the unfiltered list only: a bet that it holds these recent ids. */
  recent?: boolean;
  /** Goes on where an earlier read of the same list stopped at its page budget. */
  resume?: ResumePoint;
}

/** Where a read stopped at its page budget, with the list going on: its list (scope and filter), cursor and pages so far. */
export interface ResumePoint {
  restaurantId?: string;
  /** `filterKey` of the read's filter. */
  filter: string;
  cursor: string;
  /** Pages the read walked so far, over every job (counted against the page cap). */
  pages: number;
}

/** How deep the mirror counts for a price: past it, every read is dear and the cheaper scope is still told apart. */
export const DEPTH_REACH = 2000;

/** Pages a newest-first read walks to reach the record with `newer` records above it. */
export const pagesTo = (newer: number): number => Math.floor(newer / PAGE_SIZE) + 1;

/** Positions in a newest-first list (by the mirror's count) that its first page of 100 likely holds, with a margin for lag. */
export const RECENT_REACH = 80;

/**
 * Widest window (days, both ends included) a merge by price may make: the mirror's counts are
 * only an estimate (a mirror still importing holds fewer bookings than the API lists), so
 * far-apart days are never merged on their word.
 */
export const MAX_PRICED_WINDOW_DAYS = 31;
/**
 * Widest window a merge makes when the mirror counts no booking on its days (before the first
 * import, or with no prices at all): every window then prices at one page, so the counts say
 * nothing, and a week keeps a merged read near the size of the reads it replaces.
 */
export const MAX_UNPRICED_WINDOW_DAYS = 7;

/**
 * What the mirror says reads will cost, where it knows: bookings per day (YYYY-MM-DD) company-wide,
 * and in the restaurants ids wait in.
 */
export interface ReadPrices {
  bookingsByDay?: ReadonlyMap<string, number>;
  bookingsByRestaurantDay?: ReadonlyMap<string, ReadonlyMap<string, number>>;
}

export interface CandidateHint {
  /** orders: the furthest status known (a lower bound of the current one). */
  status?: string;
  /** orders: `status` is the mirror's copy, older than an event's change, so likely moved on: try the later states first. */
  movedOn?: boolean;
  /** bookings: the booking's date (epoch ms). */
  day?: number;
}

/**
 * The reads that may list a record, narrowest first. Orders: by the status it was last known in and
 * each later one; no known status, the unfiltered list. Bookings: the day before to the day after
 * its date; no known date, from yesterday on (new bookings are for today or later), then the
 * unfiltered list.
 */
export function candidatesFor(kind: SyncedKind, hint: CandidateHint, nowMs: number): ReadFilter[] {
  const { states, filters } = RESOURCES[kind];
  if (states) {
    const statuses = hint.status === undefined ? undefined : states.from(hint.status);
    if (!statuses) return [{}];
    const [known, ...later] = statuses;
    const ordered = hint.movedOn && known !== undefined ? [...later, known] : statuses;
    return ordered.map((status) => ({ status }));
  }
  if (filters.includes("from")) {
    if (hint.day !== undefined && !Number.isNaN(hint.day)) return [{ from: dayOf(hint.day - DAY_MS), to: dayOf(hint.day + DAY_MS) }];
    return [{ from: dayOf(nowMs - DAY_MS) }, {}];
  }
  return [{}];
}

/** A filter as a key: what `Target.depth` is indexed by. */
export const filterKey = (filter: ReadFilter): string => FILTER_NAMES.map((name) => filter[name] ?? "").join("|");

/**
 * The next read: the candidate filter that covers most of the ids still looked for (ties: the
 * filter met first), booking windows merged where that costs no more pages (`mergeWindows`), in the
 * scope priced cheapest (`windowRead`, `scopeRead`). Undefined when every id was found or ran out
 * of candidates.
 */
export function planNextRead(targets: readonly Target[], prices: ReadPrices = {}): PlannedRead | undefined {
  const resumed = resumedRead(targets);
  if (resumed) return resumed;
  const groups = new Map<string, Group>();
  for (const target of targets) {
    const filter = target.candidates[target.next];
    if (!filter) continue;
    const key = filterKey(filter);
    const group = groups.get(key) ?? { filter, targets: [] };
    group.targets.push(target);
    groups.set(key, group);
  }
  const best = mostTargets(mergeWindows([...groups.values()], prices.bookingsByDay));
  const recent = recentRead(targets);
  // The bet costs one call and finds its ids whatever their status now (a status read misses an
  // order that moved on): taken on a tie.
  if (recent && (!best || recent.targets.length >= best.targets.length)) return recent;
  if (!best) return undefined;
  return windowRead(best, prices) ?? scopeRead(best);
}

/**
 * A read that stopped at its page budget goes on first, where it stopped and in its scope, for
 * the ids still waiting on it (the most ids at one point first): so a list longer than a read's
 * budget is read to its end over several jobs, never from its top again.
 */
function resumedRead(targets: readonly Target[]): PlannedRead | undefined {
  const groups = new Map<string, PlannedRead>();
  for (const target of targets) {
    const { resume } = target;
    const filter = target.candidates[target.next];
    if (!resume || !filter || filterKey(filter) !== resume.filter) continue;
    const key = JSON.stringify([resume.restaurantId ?? null, resume.filter, resume.cursor]);
    const group = groups.get(key) ?? {
      ...(resume.restaurantId === undefined ? {} : { restaurantId: resume.restaurantId }),
      filter,
      targets: [],
      resume,
    };
    group.targets.push(target);
    groups.set(key, group);
  }
  return mostTargets(groups.values());
}

/** The group with the most targets (ties: the one met first). */
function mostTargets<G extends Group>(groups: Iterable<G>): G | undefined {
  let best: G | undefined;
  for (const group of groups) if (!best || group.targets.length > best.targets.length) best = group;
  return best;
}

/**
 * A booking window of ids in several restaurants, priced both ways by the mirror's counts: each
 * restaurant's own read of the window when those cost fewer pages together than the company-wide
 * read (a busy company's three days can be two pages where each restaurant's are a few bookings),
 * the restaurant serving most ids per page first. Undefined where the counts are not known, or the
 * company read is cheaper (ties: it, one read covers all).
 */
function windowRead(group: Group, prices: ReadPrices): PlannedRead | undefined {
  const window = windowOf(group.filter);
  const { bookingsByDay, bookingsByRestaurantDay } = prices;
  if (!window || !bookingsByDay || !bookingsByRestaurantDay) return undefined;
  const groups = byRestaurant(group.targets);
  if (groups.size < 2) return undefined;
  const own = [...groups].map(([restaurantId, targets]) => {
    const pages = windowPages(window, bookingsByRestaurantDay.get(restaurantId) ?? new Map<string, number>());
    return { restaurantId, targets, pages };
  });
  const best = mostPerPage(own);
  if (!best || sumPages(own) >= windowPages(window, bookingsByDay)) return undefined;
  return { restaurantId: best.restaurantId, filter: group.filter, targets: best.targets };
}

/**
 * Where to read a group: one restaurant's ids, that restaurant's list. Ids of several restaurants
 * with a known depth each: the cheapest split by estimated pages, a company-wide read down to the
 * k-th page for the ids it reaches by then, each other restaurant's own list for the rest (k = 0:
 * all per restaurant; ties go to the company read). Returns that split's first read; the ids left
 * are planned again after it. Without every depth (no createdAt known): company-wide.
 */
export function scopeRead(group: { filter: ReadFilter; targets: Target[] }): PlannedRead {
  const { filter, targets } = group;
  const restaurants = new Set(targets.map((t) => t.restaurantId));
  const [only] = restaurants;
  if (restaurants.size === 1 && only !== undefined) return { restaurantId: only, filter, targets };
  const key = filterKey(filter);
  const priced = targets.map((t) => ({ t, depth: t.depth?.[key] }));
  if (priced.some((p) => p.depth === undefined)) return { filter, targets };
  const pageOf = (t: Target) => pagesTo(t.depth?.[key]?.company ?? 0);
  const thresholds = [...new Set(targets.map(pageOf))].sort((a, b) => b - a);
  let best = { pages: Infinity, reach: 0 };
  for (const reach of [...thresholds, 0]) {
    const beyond = targets.filter((t) => pageOf(t) > reach);
    const pages = reach + sumPages(deepestByRestaurant(beyond, key));
    if (pages < best.pages) best = { pages, reach };
  }
  if (best.reach > 0) return { filter, targets: targets.filter((t) => pageOf(t) <= best.reach) };
  // A non-empty list always has a cheapest read: the fallbacks only satisfy the types.
  const cheapest = mostPerPage(deepestByRestaurant(targets, key));
  return { restaurantId: cheapest?.restaurantId, filter, targets: cheapest?.targets ?? [...targets] };
}

/** Targets by restaurant, in the order met. */
function byRestaurant(targets: readonly Target[]): Map<string, Target[]> {
  const by = new Map<string, Target[]>();
  for (const t of targets) {
    const own = by.get(t.restaurantId);
    if (own) own.push(t);
    else by.set(t.restaurantId, [t]);
  }
  return by;
}

/** Per restaurant, its ids and the pages its own list costs down to the deepest of them. */
const deepestByRestaurant = (targets: readonly Target[], key: string) =>
  [...byRestaurant(targets)].map(([restaurantId, own]) => {
    // A loop, not Math.max(...): a spread of unbounded ids throws past ~100k arguments.
    const pages = own.reduce((most, t) => Math.max(most, pagesTo(t.depth?.[key]?.restaurant ?? 0)), 1);
    return { restaurantId, targets: own, pages };
  });

interface PricedRead {
  restaurantId: string;
  targets: Target[];
  pages: number;
}
const sumPages = (reads: readonly PricedRead[]) => reads.reduce((n, r) => n + r.pages, 0);

/** The read that serves most ids per estimated page (ties: the one met first). */
function mostPerPage(reads: readonly PricedRead[]): PricedRead | undefined {
  let best: PricedRead | undefined;
  for (const r of reads) if (!best || r.targets.length * best.pages > best.targets.length * r.pages) best = r;
  return best;
}

/** The first-page bet: the company's newest orders or one restaurant's, whichever page likely holds more ids still looked for. */
function recentRead(targets: readonly Target[]): PlannedRead | undefined {
  const open = targets.filter((t) => t.recent !== undefined && !t.recentTried && t.next < t.candidates.length);
  const company = open.filter((t) => (t.recent?.company ?? Infinity) < RECENT_REACH);
  let best: PlannedRead = { filter: {}, targets: company, recent: true };
  const near = open.filter((t) => (t.recent?.restaurant ?? Infinity) < RECENT_REACH);
  for (const [restaurantId, list] of byRestaurant(near))
    if (list.length > best.targets.length) best = { restaurantId, filter: {}, targets: list, recent: true };
  if (best.targets.length === 0) return undefined;
  // One restaurant's ids: its own first page holds them too (they are at least as near its top).
  const [first] = best.targets;
  if (best.restaurantId === undefined && first && best.targets.every((t) => t.restaurantId === first.restaurantId))
    return { ...best, restaurantId: first.restaurantId };
  return best;
}

interface Group {
  filter: ReadFilter;
  targets: Target[];
}

/** A closed date window (no status): what booking groups merge by. */
const windowOf = (filter: ReadFilter): { from: string; to: string } | undefined =>
  filter.from !== undefined && filter.to !== undefined && filter.status === undefined ? { from: filter.from, to: filter.to } : undefined;

/** The bookings the mirror holds on the days of a date window. */
function bookingsIn(window: { from: string; to: string }, byDay: ReadonlyMap<string, number>): number {
  let n = 0;
  for (let day = Date.parse(window.from); day <= Date.parse(window.to); day += DAY_MS) n += byDay.get(dayOf(day)) ?? 0;
  return n;
}

/** Pages a company-wide read of a date window costs, by the bookings the mirror holds per day in it. */
export const windowPages = (window: { from: string; to: string }, byDay: ReadonlyMap<string, number>): number =>
  pagesTo(Math.max(0, bookingsIn(window, byDay) - 1));

/**
 * Merges groups whose filters are closed date windows while one read of the merged window costs no
 * more pages than the two apart, at most MAX_PRICED_WINDOW_DAYS wide, or MAX_UNPRICED_WINDOW_DAYS
 * when the mirror counted no booking on its days.
 */
function mergeWindows(groups: Group[], byDay: ReadonlyMap<string, number> = new Map()): Group[] {
  const windows: { window: { from: string; to: string }; group: Group }[] = [];
  const rest: Group[] = [];
  for (const group of groups) {
    const window = windowOf(group.filter);
    if (window) windows.push({ window, group });
    else rest.push(group);
  }
  windows.sort((a, b) => (a.window.from < b.window.from ? -1 : a.window.from > b.window.from ? 1 : 0));
  const out: { window: { from: string; to: string }; targets: Target[] }[] = [];
  for (const { window, group } of windows) {
    const open = out.at(-1);
    const mergedWindow = open && { from: open.window.from, to: window.to > open.window.to ? window.to : open.window.to };
    const days = open ? (Date.parse(window.to) - Date.parse(open.window.from)) / DAY_MS + 1 : Infinity;
    const cheaper =
      mergedWindow &&
      days <= (bookingsIn(mergedWindow, byDay) > 0 ? MAX_PRICED_WINDOW_DAYS : MAX_UNPRICED_WINDOW_DAYS) &&
      windowPages(mergedWindow, byDay) <= windowPages(open.window, byDay) + windowPages(window, byDay);
    if (open && cheaper) {
      if (window.to > open.window.to) open.window.to = window.to;
      for (const target of group.targets) open.targets.push(target);
    } else out.push({ window: { ...window }, targets: [...group.targets] });
  }
  return [...out.map(({ window, targets }) => ({ filter: window, targets })), ...rest];
}
