import { createListIndex } from "./list-index.js";
import type { Booking, MenuItem, Order } from "./types.js";

/** The partitions a record is listed under: everything, its restaurant, its status, both. */
const partitionsOf = (r: { restaurantId: string; status?: string }) =>
  r.status === undefined
    ? ["all", `r:${r.restaurantId}`]
    : ["all", `r:${r.restaurantId}`, `s:${r.status}`, `r:${r.restaurantId}|s:${r.status}`];

/** Each list's sort key (what its cursors carry) and the key's width. */
export const LIST_KEYS = {
  orders: { keyOf: (o: Order) => [o.createdAt, o.id], width: 2 },
  bookings: { keyOf: (b: Booking) => [b.date, b.time, b.id], width: 3 },
  menuItems: { keyOf: (m: MenuItem) => [m.id], width: 1 },
};

/** The partition holding exactly the records of a restaurant and/or status filter. */
export function partitionFor(restaurantId: string | undefined, status: string | undefined): string {
  if (restaurantId && status) return `r:${restaurantId}|s:${status}`;
  if (restaurantId) return `r:${restaurantId}`;
  return status ? `s:${status}` : "all";
}

/** The sorted lists the API pages through (ascending keys; the routes choose the direction). */
export function createListIndexes() {
  return {
    orders: createListIndex<Order>({ keyOf: LIST_KEYS.orders.keyOf, partitionsOf }),
    bookings: createListIndex<Booking>({ keyOf: LIST_KEYS.bookings.keyOf, partitionsOf }),
    menuItems: createListIndex<MenuItem>({ keyOf: LIST_KEYS.menuItems.keyOf, partitionsOf }),
  };
}
