import type { MirrorKind, MirrorRecord, RefusedUpstreamRecord } from "../mirror/store.js";
import type { ApiClient, BudgetClass } from "../upstream/index.js";

export type SyncedKind = Exclude<MirrorKind, "reviews">;

export interface Page {
  data: MirrorRecord[];
  nextCursor: string | null;
  /** When the request that answered this page was sent, by `clock` (ApiClient ListOptions.clock). */
  readAt: Date;
  /** Records the client found out of shape: set aside in the mirror's rejected records with the page. */
  refused: RefusedUpstreamRecord[];
}

/**
 * How each synced kind is listed: one table instead of a switch. Pages of 100, the API's most.
 * `clock` stamps each attempt after its rate-limit slot (the mirror's shared clock).
 */
export const LISTERS: Record<
  SyncedKind,
  (
    api: ApiClient,
    restaurantId: string | undefined,
    cursor: string | undefined,
    priority: BudgetClass,
    clock: () => Promise<Date>,
  ) => Promise<Page>
> = {
  orders: (api, restaurantId, cursor, priority, clock) => api.listOrders({ restaurantId, limit: 100, cursor }, { priority, clock }),
  bookings: (api, restaurantId, cursor, priority, clock) => api.listBookings({ restaurantId, limit: 100, cursor }, { priority, clock }),
  "menu-items": (api, restaurantId, cursor, priority, clock) =>
    api.listMenuItems({ restaurantId, limit: 100, cursor }, { priority, clock }),
};

/** Every kind read through the API, in sweep order: the one list backfill and reconcile use. */
export const SYNCED_KINDS = Object.keys(LISTERS) as SyncedKind[];

/** Kinds whose events name one record (refreshed until found); menu items refresh whole menus. */
export const TRACKS_IDS: Record<SyncedKind, boolean> = { orders: true, bookings: true, "menu-items": false };
