import { createListIndex } from "./list-index.js";
import { checkRefund, checkStatusMove } from "./state-machine.js";
import type { Random } from "./random.js";
import {
  SandboxError,
  type Booking,
  type MenuItem,
  type Order,
  type OrderItem,
  type OrderType,
  type Restaurant,
  type Review,
} from "./types.js";
import { expectDefined } from "../expect-defined.js";

export type EmitEvent = (type: string, resource: { id: string; restaurantId: string }) => void;

const money = (n: number) => Math.round(n * 100) / 100;
// ASCII only, so splitting by code unit is splitting by character.
const CONFIRM_CODE_CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789".split("");
const DISHES = ["Margherita", "Ramen", "Caesar salad", "Bibimbap", "Falafel wrap", "Tiramisu", "Pho", "Burger", "Dal", "Paella"];
const ALLERGENS = ["gluten", "dairy", "egg", "nuts", "soy", "fish"];
const TAGS = ["vegan", "vegetarian", "spicy", "new", "chef-pick"];
const NAMES = ["Ada", "Grace", "Linus", "Barbara", "Ken", "Margaret", "Dennis", "Frances"];

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
  const restaurants: Restaurant[] = [];
  const orders = new Map<string, Order>();
  const bookings = new Map<string, Booking>();
  const menuItems = new Map<string, MenuItem>();
  const reviews = new Map<string, Review>();
  const indexes = createListIndexes();
  /** Puts a new or changed record in its map and its lists. */
  const store = {
    order(o: Order) {
      orders.set(o.id, o);
      indexes.orders.upsert(o);
    },
    booking(b: Booking) {
      bookings.set(b.id, b);
      indexes.bookings.upsert(b);
    },
    menuItem(m: MenuItem) {
      menuItems.set(m.id, m);
      indexes.menuItems.upsert(m);
    },
  };
  let sequence = 0;
  // Strictly increasing createdAt, so "newest first" is a total order.
  const stamp = () => new Date(now().getTime() + sequence++).toISOString();

  const find = <T>(map: Map<string, T>, id: string, what: string): T => {
    const found = map.get(id);
    if (!found) throw new SandboxError(404, "not_found", `no ${what} ${id}`);
    return found;
  };
  const restaurantId = (id?: string) => {
    if (id === undefined) return random.pick(restaurants).id;
    if (!restaurants.some((r) => r.id === id)) throw new SandboxError(404, "not_found", `no restaurant ${id}`);
    return id;
  };

  function buildOrder(input: { restaurantId?: string; type?: OrderType; paid?: boolean; bookingId?: string | null }): Order {
    const rid = restaurantId(input.restaurantId);
    const menu = [...menuItems.values()].filter((m) => m.restaurantId === rid);
    const items: OrderItem[] = Array.from({ length: random.int(1, 3) }, () => {
      const dish = random.pick(menu);
      return {
        id: random.id("oi"),
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
    const createdAt = stamp();
    return {
      id: random.id("ord"),
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

  function buildBooking(input: {
    restaurantId: string;
    date: string;
    time: string;
    partySize: number;
    diner: { name: string; email: string };
  }): Booking {
    return {
      id: random.id("bk"),
      restaurantId: restaurantId(input.restaurantId),
      date: `${input.date}T00:00:00.000Z`,
      time: input.time,
      partySize: input.partySize,
      status: "CONFIRMED",
      confirmCode: Array.from({ length: 6 }, () => random.pick(CONFIRM_CODE_CHARS)).join(""),
      diner: { ...input.diner },
      createdAt: stamp(),
    };
  }

  const actions = {
    createOrder(input: { restaurantId?: string; type?: OrderType; paid?: boolean; bookingId?: string | null } = {}): Order {
      const order = buildOrder(input);
      store.order(order);
      emit("order.created", order);
      return order;
    },
    updateOrderStatus(id: string, status: string): Order {
      const order = find(orders, id, "order");
      const next = checkStatusMove(order.status, status);
      willChange(order);
      order.status = next;
      store.order(order);
      emit("order.status_changed", order);
      return order;
    },
    refundOrder(id: string, reason?: unknown): Order {
      if (reason !== undefined && (typeof reason !== "string" || reason.length > 500)) {
        throw new SandboxError(400, "invalid_request", "reason must be a string of at most 500 characters");
      }
      const order = find(orders, id, "order");
      checkRefund(order);
      willChange(order);
      order.status = "REFUNDED";
      order.refundedAt = stamp();
      store.order(order);
      emit("order.refunded", order);
      return order;
    },
    createBooking(input: {
      restaurantId: string;
      date: string;
      time: string;
      partySize: number;
      diner: { name: string; email: string };
    }): Booking {
      const booking = buildBooking(input);
      store.booking(booking);
      emit("booking.created", booking);
      return booking;
    },
    cancelBooking(id: string): Booking {
      const booking = find(bookings, id, "booking");
      if (booking.status === "CANCELLED") throw new SandboxError(409, "invalid_transition", "booking is already cancelled");
      willChange(booking);
      booking.status = "CANCELLED";
      store.booking(booking);
      emit("booking.status_changed", booking);
      return booking;
    },
    createReview(input: { restaurantId?: string; rating?: number; comment?: string | null; author?: string } = {}): Review {
      const review: Review = {
        id: random.id("rev"),
        restaurantId: restaurantId(input.restaurantId),
        rating: input.rating ?? random.int(1, 5),
        comment: input.comment === undefined ? "Lovely evening" : input.comment,
        author: input.author ?? random.pick(NAMES),
        createdAt: stamp(),
      };
      reviews.set(review.id, review);
      emit("review.created", review);
      return review;
    },
    updateMenuItem(id: string, patch: { price?: number; description?: string; stock?: number | null }): MenuItem {
      const item = find(menuItems, id, "menu item");
      willChange(item);
      if (patch.price !== undefined) item.price = money(patch.price);
      if (patch.description !== undefined) item.description = patch.description;
      if (patch.stock !== undefined) item.stock = patch.stock;
      item.updatedAt = stamp();
      store.menuItem(item);
      emit("menu_item.updated", item);
      return item;
    },
  };

  /** Restaurant number `r`'s menu of `count` items; emits nothing. */
  function seedMenu(r: number, count: number) {
    for (let m = 0; m < count; m++) {
      store.menuItem({
        id: random.id("mi"),
        restaurantId: `rest_${r}`,
        name: expectDefined(DISHES[(r + m) % DISHES.length], "an index within DISHES"),
        description: "House favourite",
        price: money(6 + random.int(0, 1800) / 100),
        currency: "EUR",
        allergens: ALLERGENS.filter(() => random.chance(0.3)),
        tags: TAGS.filter(() => random.chance(0.25)),
        stock: random.chance(0.5) ? random.int(0, 40) : null,
        updatedAt: stamp(),
      });
    }
  }

  /** Restaurants and their menus only (a seeded history fills in the rest); emits nothing. */
  function seedRestaurants(count: number, menuItemsEach: number) {
    for (let r = 1; r <= count; r++) {
      restaurants.push({ id: `rest_${r}`, name: `Restaurant ${r}` });
      seedMenu(r, menuItemsEach);
    }
  }

  /** A few restaurants with menus, orders in every state and bookings; emits nothing. */
  function seed(count: number) {
    for (let r = 1; r <= count; r++) {
      const rid = `rest_${r}`;
      restaurants.push({ id: rid, name: `Restaurant ${r}` });
      seedMenu(r, 6);
      const rbookings: Booking[] = [];
      for (let b = 0; b < 5; b++) {
        const day = new Date(now().getTime() + (b - 2) * 86_400_000).toISOString().slice(0, 10);
        const booking = buildBooking({
          restaurantId: rid,
          date: day,
          time: `${18 + (b % 4)}:${b % 2 ? "30" : "00"}`,
          partySize: random.int(1, 8),
          diner: { name: random.pick(NAMES), email: `guest${r}${b}@example.com` },
        });
        if (b === 4) booking.status = "CANCELLED";
        store.booking(booking);
        rbookings.push(booking);
      }
      const path = ["PENDING", "CONFIRMED", "PREPARING", "READY", "DELIVERED"] as const;
      for (let o = 0; o < 12; o++) {
        const order = buildOrder({
          restaurantId: rid,
          paid: o % 3 !== 0,
          bookingId: o < 2 ? expectDefined(rbookings[o], "a seeded booking").id : null,
        });
        if (o < 10) order.status = expectDefined(path[o % path.length], "an index within path");
        else if (o === 10) order.status = "CANCELLED";
        else {
          order.paidAt ??= order.createdAt;
          order.status = "REFUNDED";
          order.refundedAt = stamp();
        }
        store.order(order);
      }
    }
  }

  /**
   * Re-lists a record changed from outside the actions (the control route that overwrites fields,
   * a seeded history): its position follows its new sort key and status.
   */
  const relist = (kind: "orders" | "bookings" | "menu-items", record: object) => {
    if (kind === "orders") store.order(record as Order);
    else if (kind === "bookings") store.booking(record as Booking);
    else store.menuItem(record as MenuItem);
  };

  return { restaurants, orders, bookings, menuItems, reviews, indexes, actions, seed, seedRestaurants, relist, random, now };
}

export type SandboxStore = ReturnType<typeof createStore>;
