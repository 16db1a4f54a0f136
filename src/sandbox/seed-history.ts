import { CONFIRM_CODE_CHARS, GUEST_NAMES } from "./build-records.js";
import { money } from "./money.js";
import type { Random } from "./random.js";
import type { SandboxStore } from "./store.js";
import { SandboxError, type Booking, type MenuItem, type Order, type OrderStatus, type OrderType } from "./types.js";
import { expectDefined } from "../expect-defined.js";

export interface HistoryOptions {
  /** Orders over the whole history (spread evenly, with jitter, over `days` ending now). */
  orders: number;
  days: number;
  /** Bookings over the same days plus 14 days ahead; default a quarter of `orders`. */
  bookings?: number;
  /** Orders younger than this are still in flight (PENDING…READY); default 60. */
  inFlightMinutes?: number;
}

const DAY = 86_400_000;
const MINUTE = 60_000;
const IN_FLIGHT: readonly OrderStatus[] = ["PENDING", "CONFIRMED", "PREPARING", "READY"];
const TYPES: readonly OrderType[] = ["DINE_IN", "TAKEAWAY", "DELIVERY"];

/** An id of `prefix` that `taken` does not hold yet (8 random base-36 digits collide at a million). */
function freshId(random: Random, prefix: string, taken: Map<string, unknown>): string {
  for (;;) {
    const id = random.id(prefix);
    if (!taken.has(id)) return id;
  }
}

/** The state an order of this age is in: in flight while young (later steps as it ages), else final. */
function statusAt(random: Random, ageMs: number, inFlightMs: number, paid: boolean): OrderStatus {
  if (ageMs < inFlightMs) {
    if (random.chance(0.03)) return "CANCELLED";
    const step = Math.min(IN_FLIGHT.length - 1, Math.floor((ageMs / inFlightMs) * IN_FLIGHT.length + random.next() * 0.5));
    return expectDefined(IN_FLIGHT[step], "a step within IN_FLIGHT");
  }
  const roll = random.next();
  if (paid && roll < 0.05) return "REFUNDED";
  return roll < 0.12 ? "CANCELLED" : "DELIVERED";
}

function historyOrder(store: SandboxStore, menus: Map<string, MenuItem[]>, at: number, nowMs: number, inFlightMs: number): Order {
  const { random } = store;
  const restaurant = random.pick(store.restaurants).id;
  const menu = expectDefined(menus.get(restaurant), "a seeded menu");
  const items = Array.from({ length: random.int(1, 3) }, () => {
    const dish = random.pick(menu);
    return { id: random.id("oi"), menuItemId: dish.id, name: dish.name, quantity: random.int(1, 3), price: dish.price, notes: null };
  });
  const subtotal = money(items.reduce((s, i) => s + i.price * i.quantity, 0));
  const tax = money(subtotal * 0.1);
  const tip = money(random.int(0, 5));
  const createdAt = new Date(at).toISOString();
  const paid = random.chance(0.6);
  const status = statusAt(random, nowMs - at, inFlightMs, paid);
  // A refund comes minutes to a week after the order, never after now.
  const refundedAt = status === "REFUNDED" ? new Date(Math.min(nowMs - 1000, at + random.int(10 * MINUTE, 7 * DAY))).toISOString() : null;
  return {
    id: freshId(random, "ord", store.orders),
    restaurantId: restaurant,
    bookingId: null,
    type: random.pick(TYPES),
    status,
    subtotal,
    tax,
    tip,
    total: money(subtotal + tax + tip),
    currency: "EUR",
    paidAt: paid ? createdAt : null,
    refundedAt,
    createdAt,
    items,
  };
}

function historyBooking(store: SandboxStore, day: number, nowMs: number): Booking {
  const { random } = store;
  const past = day < nowMs;
  const createdAt = Math.min(nowMs - 1000, day - random.int(0, 21 * DAY));
  const name = random.pick(GUEST_NAMES);
  return {
    id: freshId(random, "bk", store.bookings),
    restaurantId: random.pick(store.restaurants).id,
    date: new Date(day).toISOString(),
    time: `${random.int(12, 21)}:${random.chance(0.5) ? "00" : "30"}`,
    partySize: random.int(1, 8),
    status: random.chance(past ? 0.1 : 0.07) ? "CANCELLED" : "CONFIRMED",
    confirmCode: Array.from({ length: 6 }, () => CONFIRM_CODE_CHARS[random.int(0, CONFIRM_CODE_CHARS.length - 1)]).join(""),
    diner: { name, email: `${name.toLowerCase()}${random.int(1, 99_999)}@example.com` },
    createdAt: new Date(createdAt).toISOString(),
  };
}

/**
 * A company's history ending now, deterministic from the store's seed: orders spread over `days`
 * (old ones DELIVERED, some CANCELLED, some paid ones REFUNDED later; the last `inFlightMinutes`
 * ones still PENDING…READY), bookings over the same days and two weeks ahead (some cancelled).
 * Records go straight into the store's maps and lists: no webhook, no history entry.
 */
export function seedHistory(store: SandboxStore, opts: HistoryOptions): void {
  const whole = (n: number | undefined, min: number) => n === undefined || (Number.isInteger(n) && n >= min);
  if (!whole(opts.orders, 0) || !whole(opts.bookings, 0) || !(opts.days > 0) || !((opts.inFlightMinutes ?? 1) > 0))
    throw new SandboxError(
      400,
      "invalid_request",
      "history needs orders and bookings ≥ 0 (whole numbers), days > 0 and inFlightMinutes > 0",
    );
  const nowMs = store.now().getTime();
  const span = opts.days * DAY - MINUTE; // the newest order is a minute old
  const start = nowMs - MINUTE - span;
  const inFlightMs = (opts.inFlightMinutes ?? 60) * MINUTE;
  const menus = new Map<string, MenuItem[]>();
  for (const m of store.menuItems.values()) menus.set(m.restaurantId, [...(menus.get(m.restaurantId) ?? []), m]);
  let previous = -Infinity;
  for (let i = 0; i < opts.orders; i++) {
    // Strictly increasing times (createdAt orders the list), in key order so the lists only append.
    const at = Math.max(previous + 1, Math.floor(start + ((i + random01(store.random)) * span) / opts.orders));
    previous = at;
    store.relist("orders", historyOrder(store, menus, at, nowMs, inFlightMs));
  }
  const bookingCount = opts.bookings ?? Math.round(opts.orders / 4);
  const days = opts.days + 14;
  const bookings: Booking[] = [];
  for (let i = 0; i < bookingCount; i++) {
    const day = Math.floor((start + Math.floor(((i + store.random.next()) * days) / bookingCount) * DAY) / DAY) * DAY;
    bookings.push(historyBooking(store, day, nowMs));
  }
  // Sorted by the list's key first, so each insert is an append.
  const key = (b: Booking) => `${b.date}\u0000${b.time}\u0000${b.id}`;
  bookings.sort((a, b) => (key(a) < key(b) ? -1 : 1));
  for (const b of bookings) store.relist("bookings", b);
}

/** A jitter within the order's slot, kept below 1 so slots never overlap. */
const random01 = (random: Random) => random.next() * 0.9;
