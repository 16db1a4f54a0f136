import type { EventHandlers } from "../handler-context.js";
import type { RefreshScheduler } from "./refresh-scheduler.js";

/**
 * The built-in handlers. Order and booking events only note what changed and schedule a
 * coalesced refresh (the API is the truth; payloads may be stale, thin, duplicated or out of
 * order). Reviews have no endpoint, so they are stored as delivered.
 */
export function createSyncHandlers(scheduler: RefreshScheduler, { withApi }: { withApi: boolean }): EventHandlers {
  const storeReview: EventHandlers["review.created"] = async (e, ctx) => {
    await ctx.mirror.upsert("reviews", [e.data], await ctx.mirror.clock());
  };
  if (!withApi) return { "review.created": storeReview };
  const order = async (e: { data: { id: string; restaurantId: string } }) => scheduler.request("orders", e.data.restaurantId, e.data.id);
  const booking = async (e: { data: { id: string; restaurantId: string } }) =>
    scheduler.request("bookings", e.data.restaurantId, e.data.id);
  return {
    "order.created": order,
    "order.status_changed": order,
    "order.refunded": order,
    "booking.created": booking,
    "booking.status_changed": booking,
    "menu_item.updated": (e) => scheduler.request("menu-items", e.data.restaurantId),
    "review.created": storeReview,
  };
}
