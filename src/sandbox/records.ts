/** The sandbox's own copies of the API's resources (spec part 2; docs/upstream.md for the rest). */
// The order state machine's statuses, types and steps have one home, the API's models; the
// sandbox's moves (below) follow them.
import { NamedError } from "../errors.js";
import {
  type Booking as UpstreamBooking,
  type MenuItem as UpstreamMenuItem,
  OPEN_ORDER_STATUSES,
  type Order,
  ORDER_FORWARD_STEPS,
  type OrderStatus,
  type Review as UpstreamReview,
  SETTABLE_ORDER_STATUSES,
} from "../upstream/models.js";

// An order (and its lines) is the record the API's client reads; the other records are the client's
// with the fields the sandbox always writes and the client does not check.
export { ORDER_STATUSES, ORDER_TYPES, type Order, type OrderItem, type OrderStatus, type OrderType } from "../upstream/models.js";

export type Booking = UpstreamBooking & { status: "CONFIRMED" | "CANCELLED"; createdAt: string };

export type MenuItem = UpstreamMenuItem & { name: string; description: string; currency: string; updatedAt: string };

export type Review = UpstreamReview & { rating: number; comment: string | null; author: string; createdAt: string };

export interface Restaurant {
  id: string;
  name: string;
}

/** Every record of a sandbox, as one run saves them for the next (state-file.ts). */
export interface SandboxRecords {
  restaurants: Restaurant[];
  orders: Order[];
  bookings: Booking[];
  menuItems: MenuItem[];
  reviews: Review[];
}

/** Failures of the sandbox's API and actions, with the status and code of docs/upstream.md. */
export class SandboxError extends NamedError {
  constructor(
    readonly status: 400 | 401 | 404 | 409 | 429 | 500 | 502 | 503,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Throws the API's error for a status move docs/upstream.md does not allow. */
export function checkStatusMove(from: OrderStatus, to: string): OrderStatus {
  if (!(SETTABLE_ORDER_STATUSES as readonly string[]).includes(to)) {
    throw new SandboxError(400, "invalid_request", `status must be one of ${SETTABLE_ORDER_STATUSES.join(", ")}`);
  }
  const target = to as OrderStatus;
  // A final status (a refund may still follow) is left by no status move.
  if (!OPEN_ORDER_STATUSES.includes(from)) throw new SandboxError(409, "invalid_transition", `order is ${from}, a terminal state`);
  if (target === "CANCELLED" || nextStatus(from) === target) return target;
  throw new SandboxError(409, "invalid_transition", `cannot move an order from ${from} to ${target}`);
}

/** Throws unless the order may be refunded: paid and not refunded yet. */
export function checkRefund(order: Pick<Order, "paidAt" | "status">): void {
  if (order.paidAt === null) throw new SandboxError(409, "not_refundable", "order is not paid");
  if (order.status === "REFUNDED") throw new SandboxError(409, "not_refundable", "order is already refunded");
}

/** The next forward step (PENDING → CONFIRMED → PREPARING → READY → DELIVERED); none from the others. */
export function nextStatus(from: OrderStatus): OrderStatus | undefined {
  const at = (ORDER_FORWARD_STEPS as readonly string[]).indexOf(from);
  return at < 0 ? undefined : ORDER_FORWARD_STEPS[at + 1];
}
