import { expectDefined } from "../errors.js";
import {
  checkRefund,
  checkStatusMove,
  type Booking,
  type MenuItem,
  type Order,
  type SandboxRecords,
  SandboxError,
  type Restaurant,
  type Review,
  type OrderItem,
  type OrderStatus,
} from "./records.js";
import { OPEN_ORDER_STATUSES, ORDER_FORWARD_STEPS, ORDER_TYPES } from "../upstream/models.js";

/**
 * The sandbox's state and every change the API (or the simulation) can make to it. Each change
 * emits the webhook event the real service would send. `willChange` sees a record just before a
 * change to it (the sandbox keeps a record's history from there); `newId` names new records
 * (default: the seeded random's ids).
 */
export function createStore(
  random: Random,
  emit: EmitEvent,
  { willChange = () => undefined, newId }: { willChange?: (record: { id: string }) => void; newId?: (prefix: string) => string } = {},
) {
  const state = createStoreState(random, newId);

  /** Records an earlier run saved, instead of a seed; new stamps come after theirs. Emits nothing. */
  const load = (records: SandboxRecords) => {
    state.restaurants.push(...records.restaurants);
    records.menuItems.forEach(state.putMenuItem);
    records.orders.forEach(state.putOrder);
    records.bookings.forEach(state.putBooking);
    records.reviews.forEach(state.putReview);
    const created = [...records.orders, ...records.bookings, ...records.reviews].map((r) => r.createdAt);
    for (const instant of [...created, ...records.menuItems.map((m) => m.updatedAt), ...records.orders.map((o) => o.refundedAt)])
      if (instant) state.stampAfter(instant);
  };

  return {
    ...state,
    actions: createActions(state, emit, willChange),
    load,
    /** The order, booking, menu item or review of this id, if any. */
    record: (id: string) => state.orders.get(id) ?? state.bookings.get(id) ?? state.menuItems.get(id) ?? state.reviews.get(id),
    /**
     * Re-lists a record changed from outside the actions (the control route that overwrites fields):
     * its position follows its new sort key and status.
     */
    relist: { orders: state.putOrder, bookings: state.putBooking, "menu-items": state.putMenuItem },
  };
}

export type SandboxStore = ReturnType<typeof createStore>;

/**
 * The sandbox's records (maps by id, and the sorted lists the API pages through), with the
 * helpers every change shares: one object the builders, actions and seeds take first.
 */
export function createStoreState(random: Random, newId: (prefix: string) => string = random.id) {
  const orders = new Map<string, Order>();
  const bookings = new Map<string, Booking>();
  const menuItems = new Map<string, MenuItem>();
  const reviews = new Map<string, Review>();
  const restaurants: Restaurant[] = [];
  // The sorted lists the API pages through (ascending keys; the routes choose the direction).
  const indexes = {
    orders: createListIndex<Order>({ keyOf: LIST_KEYS.orders.keyOf, partitionsOf }),
    bookings: createListIndex<Booking>({ keyOf: LIST_KEYS.bookings.keyOf, partitionsOf }),
    menuItems: createListIndex<MenuItem>({ keyOf: LIST_KEYS.menuItems.keyOf, partitionsOf }),
  };
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
    /** A new record's id: the seeded random's, or ids kept unique across runs (reservedIds, state-file.ts). */
    newId,
    restaurants,
    orders,
    bookings,
    menuItems,
    reviews,
    indexes,
    // Strictly increasing createdAt, so "newest first" is a total order.
    stamp: () => new Date(Date.now() + sequence++).toISOString(),
    /** Later stamps come after `instant` (records of an earlier run, whose stamps may run ahead of the clock). */
    stampAfter(instant: string) {
      sequence = Math.max(sequence, Date.parse(instant) - Date.now() + 1);
    },
    /** How many times a record was put (changed, created or loaded): unchanged means nothing new to save. */
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

/** What an event names of its record. */
interface Resource {
  id: string;
  restaurantId: string;
}

export type EmitEvent = (type: string, resource: Resource) => void;

/**
 * Every change the API (or the simulation) can make, each emitting the webhook event the real
 * service would send. `willChange` sees a record just before a change to it.
 */
export function createActions(state: StoreState, emit: EmitEvent, willChange: (record: { id: string }) => void) {
  const { orders, bookings, menuItems } = state;
  /** Stores a new record and emits its event. */
  const created = <T extends Resource>(record: T, put: (record: T) => void, type: string): T => {
    put(record);
    emit(type, record);
    return record;
  };
  /** Changes a stored record in place (its history sees it just before), re-lists it and emits its event. */
  const changed = <T extends Resource>(record: T, put: (record: T) => void, type: string, change: (record: T) => void): T => {
    willChange(record);
    change(record);
    return created(record, put, type);
  };
  return {
    createOrder: (input: Parameters<typeof buildOrder>[1] = {}): Order =>
      created(buildOrder(state, input), state.putOrder, "order.created"),
    updateOrderStatus(id: string, status: string): Order {
      const order = state.find(orders, id, "order");
      const next = checkStatusMove(order.status, status);
      return changed(order, state.putOrder, "order.status_changed", (o) => (o.status = next));
    },
    refundOrder(id: string, reason?: unknown): Order {
      if (reason !== undefined && (typeof reason !== "string" || reason.length > 500)) {
        throw new SandboxError(400, "invalid_request", "reason must be a string of at most 500 characters");
      }
      const order = state.find(orders, id, "order");
      checkRefund(order);
      return changed(order, state.putOrder, "order.refunded", (o) => {
        o.status = "REFUNDED";
        o.refundedAt = state.stamp();
      });
    },
    createBooking: (input: Parameters<typeof buildBooking>[1]): Booking =>
      created(buildBooking(state, input), state.putBooking, "booking.created"),
    cancelBooking(id: string): Booking {
      const booking = state.find(bookings, id, "booking");
      if (booking.status === "CANCELLED") throw new SandboxError(409, "invalid_transition", "booking is already cancelled");
      return changed(booking, state.putBooking, "booking.status_changed", (b) => (b.status = "CANCELLED"));
    },
    createReview: (input: Parameters<typeof buildReview>[1] = {}): Review =>
      created(buildReview(state, input), state.putReview, "review.created"),
    updateMenuItem(id: string, patch: { price?: number; description?: string; stock?: number | null }): MenuItem {
      return changed(state.find(menuItems, id, "menu item"), state.putMenuItem, "menu_item.updated", (item) => {
        if (patch.price !== undefined) item.price = money(patch.price);
        if (patch.description !== undefined) item.description = patch.description;
        if (patch.stock !== undefined) item.stock = patch.stock;
        item.updatedAt = state.stamp();
      });
    },
  };
}

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

/** A record's sort key: compared element by element. */
export type Key = (string | number)[];

export const compareKeys = (a: Key, b: Key): number => {
  // A shorter key ties on what it has: a prefix is a range bound.
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a[i];
    const y = b[i];
    if (x === undefined || y === undefined) break;
    if (x < y) return -1;
    if (x > y) return 1;
  }
  return 0;
};

interface Entry<T> {
  key: Key;
  item: T;
}

/** First position whose key is ≥ `key` (`strict`: > `key`). */
function search<T>(entries: Entry<T>[], key: Key, strict: boolean): number {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const c = compareKeys(expectDefined(entries[mid], "a position within the list").key, key);
    if (c < 0 || (strict && c === 0)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export interface PageQuery<T> {
  /** The partition to read (see `partitionsOf`). */
  partition: string;
  /** 1: ascending keys, -1: descending. */
  direction: 1 | -1;
  /** Only items strictly past this key in `direction` (a cursor). */
  after?: Key;
  /** Inclusive range of keys (a prefix bounds every key it starts). */
  lower?: Key;
  upper?: Key;
  /** A filter the partition does not cover (checked while walking). */
  filter?: (item: T) => boolean;
  limit: number;
}

/**
 * The sandbox's lists at a company's size: each record sits, sorted by its key, in every partition
 * it belongs to (e.g. "all", "restaurant r", "status s", "r and s"), kept up to date on every
 * change, so a page is a binary search and a short walk instead of a filter and a sort of
 * everything. The key and partitions a record was placed under are remembered, so a record changed
 * in place is moved by `upsert` without knowing its old values.
 */
export function createListIndex<T extends { id: string }>(opts: { keyOf: (item: T) => Key; partitionsOf: (item: T) => string[] }) {
  const partitions = new Map<string, Entry<T>[]>();
  const placed = new Map<string, { key: Key; partitions: string[] }>();

  const removeFrom = (name: string, key: Key, id: string) => {
    const entries = partitions.get(name);
    if (!entries) return;
    for (let i = search(entries, key, false); i < entries.length; i++) {
      const entry = expectDefined(entries[i], "a position within the list");
      if (compareKeys(entry.key, key) !== 0) break;
      if (entry.item.id === id) {
        entries.splice(i, 1);
        return;
      }
    }
  };

  const remove = (id: string) => {
    const was = placed.get(id);
    if (!was) return;
    for (const name of was.partitions) removeFrom(name, was.key, id);
    placed.delete(id);
  };

  const upsert = (item: T) => {
    const key = opts.keyOf(item);
    const names = opts.partitionsOf(item);
    const was = placed.get(item.id);
    if (was && compareKeys(was.key, key) === 0 && was.key.length === key.length && was.partitions.join("\n") === names.join("\n")) return;
    remove(item.id);
    for (const name of names) {
      let entries = partitions.get(name);
      if (!entries) partitions.set(name, (entries = []));
      const last = entries.at(-1);
      // Appending in key order (seeding, new records) is the common case: no search, no move.
      if (last === undefined || compareKeys(last.key, key) < 0) entries.push({ key, item });
      else entries.splice(search(entries, key, true), 0, { key, item });
    }
    placed.set(item.id, { key, partitions: names });
  };

  /** One page of a partition, and whether more items follow it. */
  const page = (q: PageQuery<T>): { items: T[]; more: boolean } => {
    const entries = partitions.get(q.partition) ?? [];
    let start = q.lower ? search(entries, q.lower, false) : 0;
    let end = q.upper ? search(entries, q.upper, true) : entries.length; // exclusive
    if (q.after && q.direction === 1) start = Math.max(start, search(entries, q.after, true));
    if (q.after && q.direction === -1) end = Math.min(end, search(entries, q.after, false));
    const items: T[] = [];
    const step = q.direction;
    for (let i = step === 1 ? start : end - 1; step === 1 ? i < end : i >= start; i += step) {
      const { item } = expectDefined(entries[i], "a position within the list");
      if (q.filter && !q.filter(item)) continue;
      if (items.length === q.limit) return { items, more: true };
      items.push(item);
    }
    return { items, more: false };
  };

  /**
   * The item at `fraction` (0 ≤ f < 1) of a partition's range from `lower` on, for picking at
   * random without copying a list (live traffic). Undefined when the range is empty.
   */
  const pick = (partition: string, fraction: number, lower?: Key): T | undefined => {
    const entries = partitions.get(partition) ?? [];
    const start = lower ? search(entries, lower, false) : 0;
    return entries[start + Math.floor(fraction * (entries.length - start))]?.item;
  };

  return { upsert, remove, page, pick, size: (partition: string) => partitions.get(partition)?.length ?? 0 };
}

export type ListIndex<T extends { id: string }> = ReturnType<typeof createListIndex<T>>;

/** A booking's confirmation code's characters (ASCII only, so splitting by code unit is splitting by character). */
export const CONFIRM_CODE_CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789".split("");
/** Diners' and reviewers' names. */
export const GUEST_NAMES = ["Ada", "Grace", "Linus", "Barbara", "Ken", "Margaret", "Dennis", "Frances"];

/** One to three lines of dishes from `menu`, a fifth of them with a note when `notes`. */
function orderLines(random: Random, menu: MenuItem[], newId: (prefix: string) => string, notes: boolean): OrderItem[] {
  return Array.from({ length: random.int(1, 3) }, () => {
    const dish = random.pick(menu);
    return {
      id: newId("oi"),
      menuItemId: dish.id,
      name: dish.name,
      quantity: random.int(1, 3),
      price: dish.price,
      notes: notes && random.chance(0.2) ? "no onions" : null,
    };
  });
}

/** An order's amounts from its lines: 10% tax and a tip at random. */
function orderAmounts(random: Random, items: OrderItem[]) {
  const subtotal = money(items.reduce((s, i) => s + i.price * i.quantity, 0));
  const tax = money(subtotal * 0.1);
  const tip = money(random.int(0, 5));
  return { subtotal, tax, tip, total: money(subtotal + tax + tip) };
}

/** A booking's confirmation code: six characters at random. */
const confirmCode = (random: Random) => Array.from({ length: 6 }, () => random.pick(CONFIRM_CODE_CHARS)).join("");

/** A new PENDING order of dishes from its restaurant's menu (not stored yet). */
export function buildOrder(
  state: StoreState,
  input: Partial<Pick<Order, "restaurantId" | "type" | "bookingId">> & { paid?: boolean },
): Order {
  const { random } = state;
  const rid = state.restaurantId(input.restaurantId);
  const menu = [...state.menuItems.values()].filter((m) => m.restaurantId === rid);
  const items = orderLines(random, menu, state.newId, true);
  const amounts = orderAmounts(random, items);
  const createdAt = state.stamp();
  return {
    id: state.newId("ord"),
    restaurantId: rid,
    bookingId: input.bookingId ?? null,
    type: input.type ?? random.pick(ORDER_TYPES),
    status: "PENDING",
    ...amounts,
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
  /** `date`: the day, YYYY-MM-DD. */
  input: Pick<Booking, "restaurantId" | "date" | "time" | "partySize" | "diner">,
): Booking {
  const { random } = state;
  return {
    id: state.newId("bk"),
    restaurantId: state.restaurantId(input.restaurantId),
    date: `${input.date}T00:00:00.000Z`,
    time: input.time,
    partySize: input.partySize,
    status: "CONFIRMED",
    confirmCode: confirmCode(random),
    diner: { ...input.diner },
    createdAt: state.stamp(),
  };
}

/** A new review, of a restaurant at random unless given (not stored yet). */
export function buildReview(state: StoreState, input: Partial<Pick<Review, "restaurantId" | "rating" | "comment" | "author">>): Review {
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

const DISHES = ["Margherita", "Ramen", "Caesar salad", "Bibimbap", "Falafel wrap", "Tiramisu", "Pho", "Burger", "Dal", "Paella"];
const ALLERGENS = ["gluten", "dairy", "egg", "nuts", "soy", "fish"];
const TAGS = ["vegan", "vegetarian", "spicy", "new", "chef-pick"];

/** Restaurant number `r` with its menu of `count` items; emits nothing. */
function seedRestaurant(state: StoreState, r: number, count: number) {
  const { random } = state;
  state.restaurants.push({ id: `rest_${r}`, name: `Restaurant ${r}` });
  for (let m = 0; m < count; m++) {
    state.putMenuItem({
      id: state.newId("mi"),
      restaurantId: `rest_${r}`,
      name: expectDefined(DISHES[(r + m) % DISHES.length], "an index within DISHES"),
      description: "House favourite",
      price: money(6 + random.int(0, 1800) / 100),
      currency: "EUR",
      allergens: ALLERGENS.filter(() => random.chance(0.3)),
      tags: TAGS.filter(() => random.chance(0.25)),
      stock: random.chance(0.5) ? random.int(0, 40) : null,
      updatedAt: state.stamp(),
    });
  }
}

/** Five bookings of restaurant `r` around today, the last one cancelled. */
function seedBookings(state: StoreState, r: number): Booking[] {
  const { random } = state;
  return Array.from({ length: 5 }, (_, b) => {
    const day = new Date(Date.now() + (b - 2) * 86_400_000).toISOString().slice(0, 10);
    const booking = buildBooking(state, {
      restaurantId: `rest_${r}`,
      date: day,
      time: `${18 + (b % 4)}:${b % 2 ? "30" : "00"}`,
      partySize: random.int(1, 8),
      diner: { name: random.pick(GUEST_NAMES), email: `guest${r}${b}@example.com` },
    });
    if (b === 4) booking.status = "CANCELLED";
    state.putBooking(booking);
    return booking;
  });
}

/** A few restaurants with menus, orders in every state and bookings; emits nothing. */
export function seedSample(state: StoreState, count: number) {
  for (let r = 1; r <= count; r++) {
    seedRestaurant(state, r, 6);
    const rbookings = seedBookings(state, r);
    for (let o = 0; o < 12; o++) {
      const order = buildOrder(state, {
        restaurantId: `rest_${r}`,
        paid: o % 3 !== 0,
        bookingId: o < 2 ? expectDefined(rbookings[o], "a seeded booking").id : null,
      });
      if (o < 10) order.status = expectDefined(ORDER_FORWARD_STEPS[o % ORDER_FORWARD_STEPS.length], "a forward step");
      else if (o === 10) order.status = "CANCELLED";
      else {
        order.paidAt ??= order.createdAt;
        order.status = "REFUNDED";
        order.refundedAt = state.stamp();
      }
      state.putOrder(order);
    }
  }
}

export interface HistoryOptions {
  /** Orders over the whole history (spread evenly, with jitter, over `days` ending now). */
  orders: number;
  days: number;
  /** Bookings over the same days plus 14 days ahead; default a quarter of `orders`. */
  bookings?: number;
  /** Orders younger than this are still in flight (PENDING…READY); default 60. */
  inFlightMinutes?: number;
  /** Each restaurant's menu items; default 6. */
  menuItems?: number;
}

const DAY = 86_400_000;
const MINUTE = 60_000;
const IN_FLIGHT = OPEN_ORDER_STATUSES;

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
  const items = orderLines(random, menu, random.id, false);
  const amounts = orderAmounts(random, items);
  const createdAt = new Date(at).toISOString();
  const paid = random.chance(0.6);
  const status = statusAt(random, nowMs - at, inFlightMs, paid);
  // A refund comes minutes to a week after the order, never after now.
  const refundedAt = status === "REFUNDED" ? new Date(Math.min(nowMs - 1000, at + random.int(10 * MINUTE, 7 * DAY))).toISOString() : null;
  return {
    id: freshId(random, "ord", store.orders),
    restaurantId: restaurant,
    bookingId: null,
    type: random.pick(ORDER_TYPES),
    status,
    ...amounts,
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
    confirmCode: confirmCode(random),
    diner: { name, email: `${name.toLowerCase()}${random.int(1, 99_999)}@example.com` },
    createdAt: new Date(createdAt).toISOString(),
  };
}

/**
 * A company's history ending now, deterministic from the store's seed: `restaurants` restaurants
 * with their menus, then orders spread over `days`
 * (old ones DELIVERED, some CANCELLED, some paid ones REFUNDED later; the last `inFlightMinutes`
 * ones still PENDING…READY), bookings over the same days and two weeks ahead (some cancelled).
 * Records go straight into the store's maps and lists: no webhook, no history entry.
 */
export function seedHistory(store: SandboxStore, opts: HistoryOptions, restaurants: number): void {
  const whole = (n: number | undefined, min: number) => n === undefined || (Number.isInteger(n) && n >= min);
  if (!whole(opts.orders, 0) || !whole(opts.bookings, 0) || !(opts.days > 0) || !((opts.inFlightMinutes ?? 1) > 0))
    throw new SandboxError(
      400,
      "invalid_request",
      "history needs orders and bookings ≥ 0 (whole numbers), days > 0 and inFlightMinutes > 0",
    );
  for (let r = 1; r <= restaurants; r++) seedRestaurant(store, r, opts.menuItems ?? 6);
  const nowMs = Date.now();
  const span = opts.days * DAY - MINUTE; // the newest order is a minute old
  const start = nowMs - MINUTE - span;
  const inFlightMs = (opts.inFlightMinutes ?? 60) * MINUTE;
  const menus = new Map<string, MenuItem[]>();
  for (const m of store.menuItems.values()) menus.set(m.restaurantId, [...(menus.get(m.restaurantId) ?? []), m]);
  let previous = -Infinity;
  for (let i = 0; i < opts.orders; i++) {
    // Strictly increasing times (createdAt orders the list), in key order so the lists only append.
    // A jitter within the order's slot, kept below 1 so slots never overlap.
    const jitter = store.random.next() * 0.9;
    const at = Math.max(previous + 1, Math.floor(start + ((i + jitter) * span) / opts.orders));
    previous = at;
    store.putOrder(historyOrder(store, menus, at, nowMs, inFlightMs));
  }
  const bookingCount = opts.bookings ?? Math.round(opts.orders / 4);
  const days = opts.days + 14;
  const bookings = Array.from({ length: bookingCount }, (_, i) => {
    const day = Math.floor((start + Math.floor(((i + store.random.next()) * days) / bookingCount) * DAY) / DAY) * DAY;
    return historyBooking(store, day, nowMs);
  });
  // Sorted by the list's key first, so each insert is an append.
  const key = (b: Booking) => `${b.date}\u0000${b.time}\u0000${b.id}`;
  bookings.sort((a, b) => (key(a) < key(b) ? -1 : 1));
  for (const b of bookings) store.putBooking(b);
}

/** mulberry32: a tiny seeded PRNG, so the same seed gives the same sandbox. */
export function seededRandom(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (min: number, max: number) => min + Math.floor(next() * (max - min + 1)),
    pick: <T>(items: readonly T[]): T => expectDefined(items[Math.floor(next() * items.length)], "pick() needs a non-empty list"),
    chance: (p: number) => next() < p,
    id: (prefix: string) => idOf(prefix, Math.floor(next() * 36 ** 8)),
  };
}
export type Random = ReturnType<typeof seededRandom>;

/** A record's id as the sandbox writes them: `prefix`, then `n` as 8 base-36 digits. */
export const idOf = (prefix: string, n: number | bigint) => `${prefix}_${n.toString(36).padStart(8, "0")}`;

/** The shape of every id the sandbox gives (idOf's, and its restaurants' `rest_<n>`): a prefix, "_", letters or digits. */
export const SANDBOX_ID = /^[a-z]{1,16}_[0-9a-z]{1,32}$/;

/** An amount rounded to cents, as the API's prices and totals are. */
export const money = (n: number) => Math.round(n * 100) / 100;
