import { money } from "./money.js";
import type { StoreState } from "./store-state.js";
import type { Booking, Order, OrderItem, OrderType, Review } from "./types.js";

/** A booking's confirmation code's characters (ASCII only, so splitting by code unit is splitting by character). */
export const CONFIRM_CODE_CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789".split("");
/** Diners' and reviewers' names. */
export const GUEST_NAMES = ["Ada", "Grace", "Linus", "Barbara", "Ken", "Margaret", "Dennis", "Frances"];

/** A new PENDING order of dishes from its restaurant's menu (not stored yet). */
export function buildOrder(
  state: StoreState,
  input: {
    restaurantId?: string;
    type?: OrderType;
    paid?: boolean;
    bookingId?: string | null;
  },
): Order {
  const { random } = state;
  const rid = state.restaurantId(input.restaurantId);
  const menu = [...state.menuItems.values()].filter((m) => m.restaurantId === rid);
  const items: OrderItem[] = Array.from({ length: random.int(1, 3) }, () => {
    const dish = random.pick(menu);
    return {
      id: state.newId("oi"),
      menuItemId: dish.id,
      name: dish.name,
      quantity: random.int(1, 3),
      price: dish.price,
      notes: random.chance(0.2) ? "no onions" : null,
    };
  });
  const subtotal = money(items.reduce((s, i) => s + i.price * i.quantity, 0));
  const tax = money(subtotal * 0.1);
  const tip = money(random.int(0, 5));
  const createdAt = state.stamp();
  return {
    id: state.newId("ord"),
    restaurantId: rid,
    bookingId: input.bookingId ?? null,
    type: input.type ?? random.pick(["DINE_IN", "TAKEAWAY", "DELIVERY"] as const),
    status: "PENDING",
    subtotal,
    tax,
    tip,
    total: money(subtotal + tax + tip),
    currency: "EUR",
    paidAt: (input.paid ?? random.chance(0.6)) ? createdAt : null,
    refundedAt: null,
    createdAt,
    items,
  };
}

/** A new CONFIRMED booking with its confirmation code (not stored yet). */
export function buildBooking(
  state: StoreState,
  input: {
    restaurantId: string;
    date: string;
    time: string;
    partySize: number;
    diner: { name: string; email: string };
  },
): Booking {
  const { random } = state;
  return {
    id: state.newId("bk"),
    restaurantId: state.restaurantId(input.restaurantId),
    date: `${input.date}T00:00:00.000Z`,
    time: input.time,
    partySize: input.partySize,
    status: "CONFIRMED",
    confirmCode: Array.from({ length: 6 }, () => random.pick(CONFIRM_CODE_CHARS)).join(""),
    diner: { ...input.diner },
    createdAt: state.stamp(),
  };
}

/** A new review, of a restaurant at random unless given (not stored yet). */
export function buildReview(
  state: StoreState,
  input: {
    restaurantId?: string;
    rating?: number;
    comment?: string | null;
    author?: string;
  },
): Review {
  const { random } = state;
  return {
    id: state.newId("rev"),
    restaurantId: state.restaurantId(input.restaurantId),
    rating: input.rating ?? random.int(1, 5),
    comment: input.comment === undefined ? "Lovely evening" : input.comment,
    author: input.author ?? random.pick(GUEST_NAMES),
    createdAt: state.stamp(),
  };
}
