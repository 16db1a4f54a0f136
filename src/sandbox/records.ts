/** The sandbox's own copies of the API's resources (spec part 2; docs/upstream.md for the rest). */
// The order state machine's statuses, types and steps have one home, the API's models; the
// sandbox's moves (below) follow them.
import {
  FINAL_ORDER_STATUSES,
  ORDER_FORWARD_STEPS,
  type OrderStatus,
  type OrderType,
  SETTABLE_ORDER_STATUSES,
} from "../upstream/models.js";

export { ORDER_STATUSES, ORDER_TYPES, type OrderStatus, type OrderType } from "../upstream/models.js";

export interface OrderItem {
  id: string;
  menuItemId: string;
  name: string;
  quantity: number;
  price: number;
  notes: string | null;
}

export interface Order {
  id: string;
  restaurantId: string;
  bookingId: string | null;
  type: OrderType;
  status: OrderStatus;
  subtotal: number;
  tax: number;
  tip: number;
  total: number;
  currency: string;
  paidAt: string | null;
  refundedAt: string | null;
  createdAt: string;
  items: OrderItem[];
}

export interface Booking {
  id: string;
  restaurantId: string;
  date: string;
  time: string;
  partySize: number;
  status: "CONFIRMED" | "CANCELLED";
  confirmCode: string;
  diner: { name: string; email: string };
  createdAt: string;
}

export interface MenuItem {
  id: string;
  restaurantId: string;
  name: string;
  description: string;
  price: number;
  currency: string;
  allergens: string[];
  tags: string[];
  stock: number | null;
  updatedAt: string;
}

export interface Review {
  id: string;
  restaurantId: string;
  rating: number;
  comment: string | null;
  author: string;
  createdAt: string;
}

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
export class SandboxError extends Error {
  constructor(
    readonly status: 400 | 401 | 404 | 409 | 429 | 500 | 502 | 503,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "SandboxError";
  }
}

/** Statuses the status operation no longer moves an order out of (a refund may still follow). */
export const TERMINAL: readonly OrderStatus[] = FINAL_ORDER_STATUSES;

/** Throws the API's error for a status move docs/upstream.md does not allow. */
export function checkStatusMove(from: OrderStatus, to: string): OrderStatus {
  if (!(SETTABLE_ORDER_STATUSES as readonly string[]).includes(to)) {
    throw new SandboxError(400, "invalid_request", `status must be one of ${SETTABLE_ORDER_STATUSES.join(", ")}`);
  }
  const target = to as OrderStatus;
  if (TERMINAL.includes(from)) throw new SandboxError(409, "invalid_transition", `order is ${from}, a terminal state`);
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
