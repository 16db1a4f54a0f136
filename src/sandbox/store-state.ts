import { createListIndexes } from "./list-indexes.js";
import type { Random } from "./random.js";
import { SandboxError, type Booking, type MenuItem, type Order, type Restaurant, type Review } from "./types.js";

/**
 * The sandbox's records (maps by id, and the sorted lists the API pages through), with the
 * helpers every change shares: one object the builders, actions and seeds take first.
 */
export function createStoreState(random: Random, now: () => Date, newId: (prefix: string) => string = random.id) {
  const orders = new Map<string, Order>();
  const bookings = new Map<string, Booking>();
  const menuItems = new Map<string, MenuItem>();
  const reviews = new Map<string, Review>();
  const restaurants: Restaurant[] = [];
  const indexes = createListIndexes();
  let sequence = 0;
  let changes = 0;
  /** Puts a new or changed record in its map and its sorted lists (reviews have none), counting the change. */
  const put =
    <T extends { id: string }>(map: Map<string, T>, index?: { upsert(record: T): void }) =>
    (record: T) => {
      changes++;
      map.set(record.id, record);
      index?.upsert(record);
    };
  return {
    random,
    now,
    /** A new record's id: the seeded random's, or ids kept unique across runs (reserved-ids.ts). */
    newId,
    restaurants,
    orders,
    bookings,
    menuItems,
    reviews,
    indexes,
    // Strictly increasing createdAt, so "newest first" is a total order.
    stamp: () => new Date(now().getTime() + sequence++).toISOString(),
    /** Later stamps come after `instant` (records of an earlier run, whose stamps may run ahead of the clock). */
    stampAfter(instant: string) {
      sequence = Math.max(sequence, Date.parse(instant) - now().getTime() + 1);
    },
    /** How many times a record was put: unchanged means nothing to save. */
    changes: () => changes,
    putOrder: put(orders, indexes.orders),
    putBooking: put(bookings, indexes.bookings),
    putMenuItem: put(menuItems, indexes.menuItems),
    putReview: put(reviews),
    find<T>(map: Map<string, T>, id: string, what: string): T {
      const found = map.get(id);
      if (!found) throw new SandboxError(404, "not_found", `no ${what} ${id}`);
      return found;
    },
    /** The restaurant given (which must exist), or one at random. */
    restaurantId(id?: string): string {
      if (id === undefined) return random.pick(restaurants).id;
      if (!restaurants.some((r) => r.id === id)) throw new SandboxError(404, "not_found", `no restaurant ${id}`);
      return id;
    },
  };
}

export type StoreState = ReturnType<typeof createStoreState>;
