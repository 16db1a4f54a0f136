import type { HandlerMap } from "../events/dispatch.js";
import type { MirrorStore } from "../mirror/mirror-store.js";
import type { RefreshQueue } from "./refresh-queue.js";
import { REFUNDED_STATUS } from "../upstream/models.js";

/** Sync needs only the mirror of a handler's context; the worker's full context is wider. */
type SyncHandlers = HandlerMap<{ mirror: MirrorStore }>;

/**
 * The built-in handlers. Order and booking events only note what changed and schedule a
 * coalesced refresh (the API is the truth; payloads may be stale, thin, duplicated or out of
 * order). Reviews have no endpoint, so they are stored as delivered.
 */
export function createSyncHandlers(scheduler: RefreshQueue, { withApi }: { withApi: boolean }): SyncHandlers {
  const storeReview: SyncHandlers["review.created"] = async (e, ctx) => {
    await ctx.mirror.upsert("reviews", [e.data], await ctx.mirror.clock());
  };
  if (!withApi) return { "review.created": storeReview };
  // What the event says of the record (status, dates) is a hint for the narrowest read, never data.
  const text = (value: unknown) => (typeof value === "string" ? value : undefined);
  const order = async (e: { id: string; data: { id: string; restaurantId: string; status?: string | undefined; createdAt?: unknown } }) =>
    scheduler.request("orders", e.data.restaurantId, e.data.id, {
      eventId: e.id,
      status: e.data.status,
      createdAt: text(e.data.createdAt),
    });
  const booking = async (e: { id: string; data: { id: string; restaurantId: string; date?: string | undefined } }) =>
    scheduler.request("bookings", e.data.restaurantId, e.data.id, { eventId: e.id, date: e.data.date });
  return {
    "order.created": order,
    "order.status_changed": order,
    // Fired by the refund operation only (spec part 6): the order is REFUNDED even when the event is thin.
    "order.refunded": (e) => order({ ...e, data: { ...e.data, status: e.data.status ?? REFUNDED_STATUS } }),
    "booking.created": booking,
    "booking.status_changed": booking,
    "menu_item.updated": (e) => scheduler.request("menu-items", e.data.restaurantId),
    "review.created": storeReview,
  };
}
