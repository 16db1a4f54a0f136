import type { MirrorStore } from "../mirror/mirror-store.js";
import type { ApiClient } from "../upstream/client.js";
import {
  ORDER_FORWARD_STEPS,
  REFUNDED_STATUS,
  type Booking,
  type CreateBookingInput,
  type Order,
  type OrderStatus,
  type SettableOrderStatus,
} from "../upstream/models.js";
import type { StepScope } from "./durable-steps.js";

/** Records read at most while looking for a step's earlier effect (20 pages of 100). */
const MAX_LOOKUP_RECORDS = 2000;

/**
 * The API client handlers get. Outside a step, or in a step's first run, it is the client as is.
 * In a step that runs again after an earlier run recorded no result (its process died between
 * the write and the record, or the write threw, e.g. timed out), each write first looks for its
 * own effect and returns it instead of sending: `createBooking` a booking of the same restaurant,
 * date, time, party size and diner; `updateOrderStatus` the order already in (or past) the status;
 * `refundOrder` the order already refunded. This narrows the window; it cannot close it (the
 * upstream has no idempotency key), see docs/handlers.md.
 */
export function stepAwareApi(api: ApiClient, deps: { current: () => StepScope | undefined; mirror: Pick<MirrorStore, "get"> }): ApiClient {
  const recovering = () => {
    const scope = deps.current();
    return scope?.recovery ? scope : undefined;
  };

  async function findOrder(id: string): Promise<Order | undefined> {
    // The mirror names the order's restaurant, which narrows the walk; without it, every order.
    const known = await deps.mirror.get("orders", id).catch(() => undefined);
    let read = 0;
    for await (const order of api.iterateOrders(known ? { restaurantId: known.restaurantId, limit: 100 } : { limit: 100 })) {
      if (order.id === id) return order;
      if (++read >= MAX_LOOKUP_RECORDS) return undefined;
    }
    return undefined;
  }

  async function findBooking(input: CreateBookingInput): Promise<Booking | undefined> {
    let read = 0;
    for await (const b of api.iterateBookings({ restaurantId: input.restaurantId, from: input.date, limit: 100 })) {
      if (sameBooking(b, input)) return b;
      if (++read >= MAX_LOOKUP_RECORDS) return undefined;
    }
    return undefined;
  }

  return {
    ...api,
    async createBooking(input) {
      const scope = recovering();
      const found = scope && (await findBooking(input));
      if (!found) return api.createBooking(input);
      scope.logger.warn({ booking: found.id }, "found the booking an earlier run of this step created; not creating another");
      return found;
    },
    async updateOrderStatus(id, status) {
      const scope = recovering();
      const found = scope && (await findOrder(id));
      if (!found || !reached(found.status, status)) return api.updateOrderStatus(id, status);
      scope.logger.warn({ order: id, status: found.status }, "the order is already in or past the status; not sending it again");
      return found;
    },
    async refundOrder(id, reason) {
      const scope = recovering();
      const found = scope && (await findOrder(id));
      if (found?.status !== REFUNDED_STATUS) return api.refundOrder(id, reason);
      scope?.logger.warn({ order: id }, "the order is already refunded; not refunding it again");
      return found;
    },
  };
}

/** The booking `input` would create: same restaurant, day, time, party size and diner. */
export function sameBooking(b: Booking, input: CreateBookingInput): boolean {
  return (
    b.restaurantId === input.restaurantId &&
    b.date.slice(0, 10) === input.date &&
    b.time.slice(0, 5) === input.time.slice(0, 5) &&
    b.partySize === input.partySize &&
    b.diner.name === input.diner.name &&
    b.diner.email.toLowerCase() === input.diner.email.toLowerCase()
  );
}

/** Whether an order in `current` already is in `wanted`, or past it on the forward line. */
export function reached(current: OrderStatus, wanted: SettableOrderStatus): boolean {
  if (current === wanted) return true;
  // The forward line of the state machine (upstream/models.ts); CANCELLED and REFUNDED are off it.
  const forward: readonly OrderStatus[] = ORDER_FORWARD_STEPS;
  const at = forward.indexOf(current);
  const want = forward.indexOf(wanted);
  return at >= 0 && want >= 0 && at > want;
}
