import type { SyncedKind } from "./synced-kinds.js";

// The read planner: pure functions from the ids waiting for a refresh to the next list read, as
// values (`PlannedRead`), tested without HTTP. The executor that spends the budget is refresh-kind.ts.

/** The filters a refresh read may use (spec part 4): order status; a booking date window (YYYY-MM-DD, inclusive). */
export interface ReadFilter {
  status?: string;
  from?: string;
  to?: string;
}

/** One id being looked for, and the reads that may list it, narrowest first. */
export interface Target {
  id: string;
  restaurantId: string;
  /** Where the record sits in its list's sort order (epoch ms): an order's createdAt, a booking's date. */
  sortKey?: number;
  candidates: readonly ReadFilter[];
  /** The candidate to try next; `candidates.length` when every one was tried this round. */
  next: number;
  /**
   * orders: how many orders the mirror holds that are newer (company-wide, in its restaurant),
   * counted up to RECENT_REACH: under it, the first page of the unfiltered newest-first list
   * likely holds it, whatever its status now.
   */
  recent?: { company: number; restaurant: number };
  /** The first-page bet was made for it this round (and missed). */
  recentTried?: boolean;
}

export interface PlannedRead {
  /** Absent: company-wide (the ids span several restaurants). */
  restaurantId?: string;
  filter: ReadFilter;
  /** The ids this read is for (others it meets on the way are settled too). */
  targets: Target[];
  /** The first page of the unfiltered list only: a bet that it holds these recent ids. */
  recent?: boolean;
}

/** Positions in a newest-first list (by the mirror's count) that its first page of 100 likely holds, with a margin for lag. */
export const RECENT_REACH = 80;

const FORWARD = ["PENDING", "CONFIRMED", "PREPARING", "READY", "DELIVERED"];

/**
 * The statuses an order in `status` may be in now, the carried one first (docs/upstream.md): the
 * forward steps, CANCELLED from any non-final state, REFUNDED from a paid order (any status but
 * REFUNDED). Unknown: undefined (no status filter can be trusted).
 */
export function statusesFrom(status: string): string[] | undefined {
  const step = FORWARD.indexOf(status);
  if (step >= 0 && step < FORWARD.length - 1) return [...FORWARD.slice(step), "CANCELLED", "REFUNDED"];
  if (status === "DELIVERED" || status === "CANCELLED") return [status, "REFUNDED"];
  if (status === "REFUNDED") return [status];
  return undefined;
}

const DAY_MS = 86_400_000;
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** Widest booking window one read covers when ids of nearby days are merged into it. */
export const MAX_WINDOW_DAYS = 7;

export interface CandidateHint {
  /** orders: the furthest status known (a lower bound of the current one). */
  status?: string;
  /** orders: `status` is the mirror's copy, older than the change an event announced: try the later states first. */
  movedOn?: boolean;
  /** bookings: the booking's date (epoch ms). */
  day?: number;
}

/**
 * The reads that may list a record, narrowest first. Orders: by the status it was last known in
 * and each later one; no known status, the unfiltered list. Bookings: the day before to the day
 * after its date; no known date, from yesterday on (new bookings are for today or later), then
 * the unfiltered list.
 */
export function candidatesFor(kind: SyncedKind, hint: CandidateHint, nowMs: number): ReadFilter[] {
  if (kind === "orders") {
    const statuses = hint.status === undefined ? undefined : statusesFrom(hint.status);
    if (!statuses) return [{}];
    // Known only from the mirror while an event says it changed: it has most likely moved on.
    const [known, ...later] = statuses;
    const ordered = hint.movedOn && known !== undefined ? [...later, known] : statuses;
    return ordered.map((status) => ({ status }));
  }
  if (kind === "bookings") {
    if (hint.day !== undefined && !Number.isNaN(hint.day)) return [{ from: dayOf(hint.day - DAY_MS), to: dayOf(hint.day + DAY_MS) }];
    return [{ from: dayOf(nowMs - DAY_MS) }, {}];
  }
  return [{}];
}

const keyOf = (filter: ReadFilter) => `${filter.status ?? ""}|${filter.from ?? ""}|${filter.to ?? ""}`;

/**
 * The next read: the candidate filter that covers most of the ids still looked for (ties: the
 * filter met first), company-wide when those ids span several restaurants, else for their one
 * restaurant. Booking windows of nearby days are merged into one (at most MAX_WINDOW_DAYS wide).
 * Undefined when every id was found or ran out of candidates.
 */
export function planNextRead(targets: readonly Target[]): PlannedRead | undefined {
  const groups = new Map<string, Group>();
  for (const target of targets) {
    const filter = target.candidates[target.next];
    if (!filter) continue;
    const key = keyOf(filter);
    const group = groups.get(key) ?? { filter, targets: [] };
    group.targets.push(target);
    groups.set(key, group);
  }
  const merged = mergeWindows([...groups.values()]);
  let best: Group | undefined;
  for (const group of merged) if (!best || group.targets.length > best.targets.length) best = group;
  const recent = recentRead(targets);
  // The bet costs one call and finds its ids whatever their status now (a status read misses an order that moved on): taken on a tie.
  if (recent && (!best || recent.targets.length >= best.targets.length)) return recent;
  if (!best) return undefined;
  const restaurants = new Set(best.targets.map((t) => t.restaurantId));
  const [only] = restaurants;
  return { ...(restaurants.size === 1 && only !== undefined ? { restaurantId: only } : {}), filter: best.filter, targets: best.targets };
}

/**
 * The best first-page bet: the company's newest orders, or one restaurant's, whichever page
 * likely holds more of the ids still looked for (orders the mirror counts under RECENT_REACH newer).
 */
function recentRead(targets: readonly Target[]): PlannedRead | undefined {
  const open = targets.filter((t) => t.recent !== undefined && !t.recentTried && t.next < t.candidates.length);
  const company = open.filter((t) => (t.recent?.company ?? Infinity) < RECENT_REACH);
  let best: PlannedRead = { filter: {}, targets: company, recent: true };
  const byRestaurant = new Map<string, Target[]>();
  for (const t of open) {
    if ((t.recent?.restaurant ?? Infinity) >= RECENT_REACH) continue;
    const list = byRestaurant.get(t.restaurantId) ?? [];
    list.push(t);
    byRestaurant.set(t.restaurantId, list);
  }
  for (const [restaurantId, list] of byRestaurant)
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

/** Merges groups whose filters are closed date windows into windows of at most MAX_WINDOW_DAYS. */
function mergeWindows(groups: Group[]): Group[] {
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
    if (open && (Date.parse(window.to) - Date.parse(open.window.from)) / DAY_MS <= MAX_WINDOW_DAYS) {
      if (window.to > open.window.to) open.window.to = window.to;
      open.targets.push(...group.targets);
    } else out.push({ window: { ...window }, targets: [...group.targets] });
  }
  return [...out.map(({ window, targets }) => ({ filter: window, targets })), ...rest];
}
