import { seedRestaurants, seedSample } from "./seed-sample.js";
import { createActions, type EmitEvent } from "./store-actions.js";
import { createStoreState } from "./store-state.js";
import type { Random } from "./random.js";
import type { Booking, MenuItem, Order, SandboxRecords } from "./types.js";

/**
 * The sandbox's state and every change the API (or the simulation) can make to it. Each change
 * emits the webhook event the real service would send. `willChange` sees a record just before a
 * change to it (the sandbox keeps a record's history from there); `newId` names new records
 * (default: the seeded random's ids).
 */
export function createStore(
  random: Random,
  emit: EmitEvent,
  now: () => Date,
  { willChange = () => undefined, newId }: { willChange?: (record: { id: string }) => void; newId?: (prefix: string) => string } = {},
) {
  const state = createStoreState(random, now, newId);
  const { restaurants, orders, bookings, menuItems, reviews, indexes } = state;

  /**
   * Re-lists a record changed from outside the actions (the control route that overwrites fields,
   * a seeded history): its position follows its new sort key and status.
   */
  const relist = (kind: "orders" | "bookings" | "menu-items", record: object) => {
    if (kind === "orders") state.putOrder(record as Order);
    else if (kind === "bookings") state.putBooking(record as Booking);
    else state.putMenuItem(record as MenuItem);
  };

  /** Records an earlier run saved, instead of a seed; new stamps come after theirs. Emits nothing. */
  const load = (records: SandboxRecords) => {
    restaurants.push(...records.restaurants);
    for (const m of records.menuItems) {
      state.putMenuItem(m);
      state.stampAfter(m.updatedAt);
    }
    for (const r of [...records.orders, ...records.bookings, ...records.reviews]) state.stampAfter(r.createdAt);
    for (const o of records.orders) {
      state.putOrder(o);
      if (o.refundedAt) state.stampAfter(o.refundedAt);
    }
    for (const b of records.bookings) state.putBooking(b);
    for (const r of records.reviews) state.putReview(r);
  };

  return {
    restaurants,
    orders,
    bookings,
    menuItems,
    reviews,
    indexes,
    actions: createActions(state, emit, willChange),
    /** A few restaurants with menus, orders in every state and bookings; emits nothing. */
    seed: (count: number) => seedSample(state, count),
    /** Restaurants and their menus only (a seeded history fills in the rest); emits nothing. */
    seedRestaurants: (count: number, menuItemsEach: number) => seedRestaurants(state, count, menuItemsEach),
    load,
    /** Whether an order, booking, menu item or review has this id. */
    holds: (id: string) => orders.has(id) || bookings.has(id) || menuItems.has(id) || reviews.has(id),
    relist,
    /** How many times a record was put (changed, created or loaded): unchanged means nothing new to save. */
    changes: state.changes,
    random,
    now,
  };
}

export type SandboxStore = ReturnType<typeof createStore>;
