import type { Logger } from "pino";
import type { Random, SandboxStore } from "./store.js";
import { nextStatus } from "./records.js";
import { OPEN_ORDER_STATUSES, ORDER_FORWARD_STEPS } from "../upstream/models.js";

export interface TrafficOptions {
  /** Webhook events per second, all kinds together (on average). */
  eventsPerSecond: number;
  /** From a new order's PENDING to DELIVERED (four steps, evenly apart); default 180,000 (3 min). */
  orderLifetimeMs?: number;
  /** Share of the changes made without their webhook (deliveries lost for good); default 0. */
  missedShare?: number;
  /**
   * Relative weights of the changes that start on their own (a new order also brings its four
   * later steps); a kind left out of a given mix never starts. Default: new orders 0.55, refunds of old orders 0.15, bookings made 0.15,
   * bookings cancelled 0.05, menu edits 0.1.
   */
  mix?: Partial<Record<TrafficKind, number>>;
  /**
   * Refunds pick delivered orders created within this many ms of now (recent orders, as after a
   * busy evening); default: any delivered order of the whole history.
   */
  refundsWithinMs?: number;
}

export type TrafficKind = "newOrders" | "refunds" | "bookings" | "cancellations" | "menuEdits";

/** One change the traffic made, with the sandbox's time of it. */
export interface TrafficChange {
  at: number;
  type: string;
  id: string;
  restaurantId: string;
  /** The record's status after the change (orders and bookings). */
  status?: string;
  /** Made without its webhook. */
  missed: boolean;
}

export type Traffic = ReturnType<typeof startTraffic>;

const DEFAULT_MIX: Record<TrafficKind, number> = { newOrders: 0.55, refunds: 0.15, bookings: 0.15, cancellations: 0.05, menuEdits: 0.1 };
/** A new order's steps after PENDING. */
const STEPS = ORDER_FORWARD_STEPS.slice(1);
const TICK_MS = 50;

/**
 * Live traffic of a company's shape through the store's own actions (webhooks delivered as usual,
 * or not at all for `missedShare` of them): new orders that move through the kitchen over a few
 * minutes (some cancelled on the way), refunds of old paid orders, bookings made and cancelled,
 * menu edits.
 */
export function startTraffic(deps: { store: SandboxStore; silently: <T>(change: () => T) => T; logger?: Logger }, opts: TrafficOptions) {
  const { store } = deps;
  const { random } = store;
  const lifetime = opts.orderLifetimeMs ?? 180_000;
  const mix = opts.mix ?? DEFAULT_MIX; // given: it replaces the defaults (a kind left out never starts)
  const weights = Object.entries(mix) as [TrafficKind, number][];
  const totalWeight = weights.reduce((s, [, w]) => s + w, 0);
  /** Every change made so far, oldest first (returned, with `stop`). */
  const changes: TrafficChange[] = [];
  const steps: { at: number; id: string; status: string }[] = [];

  const act = (type: string, change: () => { id: string; restaurantId: string; status?: string }) => {
    const missed = random.chance(opts.missedShare ?? 0);
    const r = missed ? deps.silently(change) : change();
    changes.push({ at: Date.now(), type, id: r.id, restaurantId: r.restaurantId, ...(r.status ? { status: r.status } : {}), missed });
  };

  const start: Record<TrafficKind, () => void> = {
    newOrders() {
      act("order.created", () => {
        const order = store.actions.createOrder({ paid: random.chance(0.6) });
        const cancelAt = random.chance(0.05) ? random.int(0, STEPS.length - 1) : -1;
        STEPS.forEach((status, i) => {
          if (cancelAt >= 0 && i > cancelAt) return;
          steps.push({ at: Date.now() + ((i + 1) * lifetime) / STEPS.length, id: order.id, status: i === cancelAt ? "CANCELLED" : status });
        });
        return order;
      });
    },
    refunds() {
      // A delivered order, paid (any, or a recent one): a few tries at random positions of the DELIVERED list.
      for (let i = 0; i < 10; i++) {
        const lower = opts.refundsWithinMs === undefined ? undefined : [new Date(Date.now() - opts.refundsWithinMs).toISOString()];
        const order = store.indexes.orders.pick("s:DELIVERED", random.next(), lower);
        if (order?.paidAt) {
          act("order.refunded", () => store.actions.refundOrder(order.id, "traffic refund"));
          return;
        }
      }
    },
    bookings() {
      const day = dayAhead(random);
      act("booking.created", () => store.actions.createBooking(bookingInput(store, day, "Traffic Guest")));
    },
    cancellations() {
      const today = new Date().toISOString().slice(0, 10);
      const booking = store.indexes.bookings.pick("s:CONFIRMED", random.next(), [today]);
      if (booking) act("booking.status_changed", () => store.actions.cancelBooking(booking.id));
    },
    menuEdits() {
      act("menu_item.updated", () => editMenuItem(store));
    },
  };

  const startOne = () => {
    let roll = random.next() * totalWeight;
    for (const [kind, w] of weights) {
      if ((roll -= w) < 0) {
        start[kind]();
        return;
      }
    }
  };

  const guarded = (change: () => void) => warnOnFailure(change, deps.logger, "traffic step failed");

  const runDueSteps = (now: number) => {
    const due = steps.filter((s) => s.at <= now);
    if (due.length === 0) return;
    steps.splice(0, steps.length, ...steps.filter((s) => s.at > now));
    for (const step of due) {
      const order = store.orders.get(step.id);
      // Changed by someone else meanwhile (cancelled, refunded): its remaining steps lapse.
      if (!order || !OPEN_ORDER_STATUSES.includes(order.status)) continue;
      guarded(() => act("order.status_changed", () => store.actions.updateOrderStatus(step.id, step.status)));
    }
  };

  // The rate counts every change, the steps of orders in flight too: new changes start only to
  // fill what the steps leave, so the rate holds from the first second (no ramp-up while the
  // first orders are young) and the mix settles to its weights.
  const began = Date.now();
  const timer = setInterval(() => {
    const now = Date.now();
    runDueSteps(now);
    const target = Math.floor(((now - began) / 1000) * opts.eventsPerSecond);
    // Bounded: a start that finds nothing to change (no refundable order) makes no change.
    for (let tries = target - changes.length + 5; changes.length < target && tries > 0; tries--) guarded(startOne);
  }, TICK_MS);
  return { changes, stop: () => clearInterval(timer) };
}

/** A day (YYYY-MM-DD) of the next two weeks, at random. */
const dayAhead = (random: Random) => new Date(Date.now() + random.int(0, 14) * 86_400_000).toISOString().slice(0, 10);

/** A booking on `date` at a restaurant, time and party size at random, for `guest`. */
function bookingInput(store: SandboxStore, date: string, guest: string) {
  const { random } = store;
  return {
    restaurantId: random.pick(store.restaurants).id,
    date,
    time: `${random.int(12, 21)}:${random.pick(["00", "30"])}`,
    partySize: random.int(1, 8),
    diner: { name: guest, email: "guest@example.com" },
  };
}

/** A menu item at random gets a new stock and a price 50 cents up or down (at least 1). */
function editMenuItem(store: SandboxStore) {
  const { random } = store;
  const item = random.pick([...store.menuItems.values()]);
  return store.actions.updateMenuItem(item.id, { stock: random.int(0, 40), price: Math.max(1, item.price + random.pick([-0.5, 0.5])) });
}

/** Live traffic for a local run: each tick, one plausible change, through the same actions. */
export function startSimulation(store: SandboxStore, intervalMs: number, logger?: Logger): () => void {
  const { random } = store;
  const tick = () => {
    const open = [...store.orders.values()].filter((o) => OPEN_ORDER_STATUSES.includes(o.status));
    const roll = random.next();
    if (roll < 0.3 || open.length === 0) store.actions.createOrder({ paid: random.chance(0.7) });
    else if (roll < 0.65) {
      const order = random.pick(open);
      const next = nextStatus(order.status);
      if (next) store.actions.updateOrderStatus(order.id, next);
    } else if (roll < 0.7) store.actions.updateOrderStatus(random.pick(open).id, "CANCELLED");
    else if (roll < 0.75) {
      const paid = [...store.orders.values()].filter((o) => o.paidAt && o.status !== "REFUNDED");
      if (paid.length > 0) store.actions.refundOrder(random.pick(paid).id, "simulated refund");
    } else if (roll < 0.85) store.actions.createBooking(bookingInput(store, dayAhead(random), "Sim Guest"));
    else if (roll < 0.9) {
      const confirmed = [...store.bookings.values()].filter((b) => b.status === "CONFIRMED");
      if (confirmed.length > 0) store.actions.cancelBooking(random.pick(confirmed).id);
    } else if (roll < 0.95) store.actions.createReview();
    else editMenuItem(store);
  };
  const timer = setInterval(() => warnOnFailure(tick, logger, "simulation step failed"), intervalMs);
  return () => clearInterval(timer);
}

/** Runs one step of live traffic; a step that fails (a record gone meanwhile) is a warning, and the traffic goes on. */
function warnOnFailure(step: () => void, logger: Logger | undefined, message: string): void {
  try {
    step();
  } catch (err) {
    logger?.warn({ err: (err as Error).message }, message);
  }
}
