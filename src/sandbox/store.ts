import { seedRestaurants, seedSample } from "./seed-sample.js";
import { createActions, type EmitEvent } from "./store-actions.js";
import { createStoreState } from "./store-state.js";
import type { Random } from "./random.js";
import type { Booking, MenuItem, Order } from "./types.js";

/**
 * The sandbox's state and every change the API (or the simulation) can make to it. Each change
 * emits the webhook event the real service would send. `willChange` sees a record just before a
 * change to it (the sandbox keeps a record's history from there).
 */
export function createStore(
  random: Random,
  emit: EmitEvent,
  now: () => Date,
  willChange: (record: { id: string }) => void = () => undefined,
) {
  const state = createStoreState(random, now);
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
    relist,
    random,
    now,
  };
}

export type SandboxStore = ReturnType<typeof createStore>;
