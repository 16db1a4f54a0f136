import type { RecordHistory } from "./record-history.js";
import type { SandboxStore } from "./store.js";

/** Copies of the sandbox's records, for tests and the control routes (changing them changes nothing). */
export function stateView(store: SandboxStore, history: RecordHistory) {
  const copy = <T>(map: Map<string, T>) => [...map.values()].map((v) => structuredClone(v));
  return {
    restaurants: () => store.restaurants.map((r) => ({ ...r })),
    orders: () => copy(store.orders),
    bookings: () => copy(store.bookings),
    menuItems: () => copy(store.menuItems),
    reviews: () => copy(store.reviews),
    history: (id: string) =>
      history.of(id, store.orders.get(id) ?? store.bookings.get(id) ?? store.menuItems.get(id) ?? store.reviews.get(id)),
  };
}

export type StateView = ReturnType<typeof stateView>;
