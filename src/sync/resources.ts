import type { SyncedKind } from "../mirror/kinds.js";
import type { SyncCheckpoints } from "../mirror/sync-checkpoints.js";
import type { MirrorRecord, MirrorStore, UpsertResult } from "../mirror/mirror-store.js";
import type { MirrorWriter, SourceOf } from "../mirror/change-outbox.js";
import type { ApiClient, ReadPage } from "../upstream/client.js";
import { MAX_LIMIT } from "../upstream/models.js";
import type { ListWalk } from "../upstream/paginate.js";
import type { BudgetClass } from "../upstream/rate-limiter.js";
import { FINAL_ORDER_STATUSES, OPEN_ORDER_STATUSES, orderStatusesFrom, orderStatusRank } from "../upstream/models.js";

/**
 * A page of a kind's list as the client answered it: `readAt`, when the request that answered this
 * page was sent, by `clock` (ApiClient ListOptions.clock); `refused`, records the client found out
 * of shape: set aside in the mirror's rejected records with the page.
 */
export type Page = ReadPage<MirrorRecord>;

/** What every sweep (the tiers, backfill) reads and writes through: the API, the mirror, the walks' checkpoints. */
export interface SweepDeps {
  api: ApiClient;
  mirror: MirrorStore;
  checkpoints: SyncCheckpoints;
}

/** The filters' names, in the order a filter's key lists them (read-plan.ts `filterKey`, a refusal's key). */
export const FILTER_NAMES = ["status", "from", "to"] as const;

/** The filters a list may take (spec part 4): order status; a booking date window (YYYY-MM-DD, inclusive). */
export type ReadFilter = Partial<Record<(typeof FILTER_NAMES)[number], string | undefined>>;

/** The names of the filters `filter` sets, in FILTER_NAMES order. */
export const filterNames = (filter: ReadFilter): string[] => FILTER_NAMES.filter((name) => filter[name] !== undefined);

/** A day in ms: the step between the days a date filter names. */
export const DAY_MS = 86_400_000;
/** The day of an instant (epoch ms) as a date filter names it: YYYY-MM-DD by UTC, the API's own zone. */
export const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** What a read asks of a list; each kind's list passes on only the filters it takes. */
export interface ListQuery extends ReadFilter {
  restaurantId?: string | undefined;
  cursor?: string | undefined;
}

/** The order a kind's records move through (orders only: the API's state machine, docs/upstream.md). */
export interface StateOrder {
  /** How far along a status is; undefined for one the spec does not show. The one rank: upstream/models.ts. */
  rank: (status: unknown) => number | undefined;
  /** Statuses that can still change (the state machine only moves forward from these). */
  open: readonly string[];
  /** Where a record ends: read back when an open record of the mirror left every open list. */
  final: readonly string[];
  /** The statuses a record in `status` may be in now, the carried one first; undefined for an unknown one. */
  from: (status: string) => string[] | undefined;
}

/** One synced kind: everything the engine knows of it, read from here rather than switched on. */
export interface Resource {
  /** One page of the kind's list (100, the API's most); `clock` stamps it after its rate-limit slot. */
  list: (
    api: ApiClient,
    query: ListQuery,
    opts: { priority: BudgetClass; clock: () => Promise<Date>; signal?: AbortSignal },
  ) => Promise<Page>;
  /**
   * The filters its list takes (spec part 4): what a refresh may narrow a read by, and how
   * `backfill --since` narrows the whole list (by `from`, else by cutting at the sort key).
   */
  filters: readonly (keyof ReadFilter)[];
  /**
   * Where a record sits in its list's sort order (epoch ms): an order's createdAt, a booking's
   * date; NaN when it has none. The spec states no order: the engine reads it off these keys.
   */
  sortKey: (record: object) => number;
  states?: StateOrder;
  /** Whether events name one record (refreshed until found); menus are refreshed whole. */
  tracksIds: boolean;
  /**
   * What the active tier reads of the kind: the lists whose records can still change, company-wide
   * (`today`: the day the pass reads from, YYYY-MM-DD by UTC, the API's own zone).
   */
  activeReads: (today: string) => ListQuery[];
  /**
   * What a refresh prices its candidate reads by in the mirror (sync/refresh-kind.ts): `depth`, the
   * records newer than the id in the list a read walks (a newest-first list); `days`, the records
   * per day over a date window; none, every read costs its first page.
   */
  pricedBy?: "depth" | "days";
}

/** A sort key read from a date field of a record (or of an event's note, whose fields are named alike). */
const dateField =
  (name: string) =>
  (record: object): number => {
    const value = (record as Record<string, unknown>)[name];
    return typeof value === "string" ? Date.parse(value) : NaN;
  };

/** The orders' state order: the table's one row with states. */
export const ORDER_STATES: StateOrder = {
  rank: orderStatusRank,
  open: OPEN_ORDER_STATUSES,
  final: FINAL_ORDER_STATUSES,
  from: orderStatusesFrom,
};

/** Records one page of a kind's list holds: every read asks for the API's most (what the read planner prices pages by). */
export const PAGE_SIZE = MAX_LIMIT;

/** The synced kinds as rows, in sweep order (the order backfill and reconcile walk them). */
export const RESOURCES: Record<SyncedKind, Resource> = {
  orders: {
    list: (api, { restaurantId, cursor, status }, opts) => api.listOrders({ restaurantId, status, limit: PAGE_SIZE, cursor }, opts),
    filters: ["status"],
    sortKey: dateField("createdAt"),
    states: ORDER_STATES,
    tracksIds: true,
    activeReads: () => ORDER_STATES.open.map((status) => ({ status })),
    pricedBy: "depth",
  },
  bookings: {
    list: (api, { restaurantId, cursor, from, to }, opts) => api.listBookings({ restaurantId, from, to, limit: PAGE_SIZE, cursor }, opts),
    filters: ["from", "to"],
    sortKey: dateField("date"),
    tracksIds: true,
    activeReads: (today) => [{ from: today }],
    pricedBy: "days",
  },
  "menu-items": {
    list: (api, { restaurantId, cursor }, opts) => api.listMenuItems({ restaurantId, limit: PAGE_SIZE, cursor }, opts),
    filters: [],
    sortKey: () => NaN,
    tracksIds: false,
    activeReads: () => [{}],
  },
};

/**
 * One page of a kind's list in a budget class, stamped by the mirror's clock after its rate-limit
 * slot (what the mirror's guarded write orders writes by): how every reader reads.
 */
export function readPage(
  ctx: { api: ApiClient; mirror: Pick<MirrorStore, "clock">; signal?: AbortSignal | undefined },
  kind: SyncedKind,
  query: ListQuery,
  priority: BudgetClass,
): Promise<Page> {
  // The signal ends the read wherever it waits (the budget, a backoff, the answer): a Ctrl-C's.
  return RESOURCES[kind].list(ctx.api, query, { priority, clock: () => ctx.mirror.clock(), ...(ctx.signal ? { signal: ctx.signal } : {}) });
}

/**
 * Writes one page the API answered, as every reader does: through `writer` with its changes'
 * source, or without one (`backfill --no-changes`) a plain upsert that emits no change events.
 */
export function writePage(
  mirror: MirrorStore,
  writer: MirrorWriter | undefined,
  kind: SyncedKind,
  page: Page,
  source: SourceOf,
): Promise<UpsertResult> {
  if (!writer) return mirror.upsert(kind, page.data, page.readAt, { refused: page.refused });
  return writer.write(kind, page.data, page.readAt, source, page.refused);
}

/** A kind's list as a walk of the list reader (upstream/paginate.ts `readList`): its pages and its sort key. */
export function walkOf(
  ctx: { api: ApiClient; mirror: Pick<MirrorStore, "clock"> },
  kind: SyncedKind,
  query: ListQuery,
  priority: BudgetClass,
): Pick<ListWalk<Page>, "fetchPage" | "sortKey"> {
  return { fetchPage: (cursor) => readPage(ctx, kind, { ...query, cursor }, priority), sortKey: RESOURCES[kind].sortKey };
}

/** Every kind read through the API, in sweep order: the one list backfill and reconcile use. */
export const SYNCED_KINDS = Object.keys(RESOURCES) as SyncedKind[];
