import type { MirrorKind, MirrorRecord } from "../../mirror/store.js";
import type { ApiClient } from "../../upstream/index.js";

export type SyncedKind = Exclude<MirrorKind, "reviews">;
export type Priority = "high" | "low";

export interface Page {
  data: MirrorRecord[];
  nextCursor: string | null;
}

/** How each synced kind is listed: one table instead of a switch. Pages of 100, the API's most. */
export const LISTERS: Record<
  SyncedKind,
  (api: ApiClient, restaurantId: string | undefined, cursor: string | undefined, priority: Priority) => Promise<Page>
> = {
  orders: (api, restaurantId, cursor, priority) => api.listOrders({ restaurantId, limit: 100, cursor }, { priority }),
  bookings: (api, restaurantId, cursor, priority) => api.listBookings({ restaurantId, limit: 100, cursor }, { priority }),
  "menu-items": (api, restaurantId, cursor, priority) => api.listMenuItems({ restaurantId, limit: 100, cursor }, { priority }),
};

/** Every kind read through the API, in sweep order: the one list backfill and reconcile use. */
export const SYNCED_KINDS = Object.keys(LISTERS) as SyncedKind[];

/** Kinds whose events name one record (refreshed until found); menu items refresh whole menus. */
export const TRACKS_IDS: Record<SyncedKind, boolean> = { orders: true, bookings: true, "menu-items": false };
