/** The sandbox's own copies of the API's resources (spec part 2; docs/upstream.md for the rest). */
/** Every status an order of the sandbox's state machine (below) can have. */
export const ORDER_STATUSES = ["PENDING", "CONFIRMED", "PREPARING", "READY", "DELIVERED", "CANCELLED", "REFUNDED"] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];
export const ORDER_TYPES = ["DINE_IN", "TAKEAWAY", "DELIVERY"] as const;
export type OrderType = (typeof ORDER_TYPES)[number];

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

/** The values the status operation accepts (spec part 3 rule 1). */
export const SETTABLE: readonly OrderStatus[] = ["CONFIRMED", "PREPARING", "READY", "DELIVERED", "CANCELLED"];
const NEXT: Partial<Record<OrderStatus, OrderStatus>> = {
  PENDING: "CONFIRMED",
  CONFIRMED: "PREPARING",
  PREPARING: "READY",
  READY: "DELIVERED",
};
export const TERMINAL: readonly OrderStatus[] = ["DELIVERED", "CANCELLED", "REFUNDED"];

/** Throws the API's error for a status move docs/upstream.md does not allow. */
export function checkStatusMove(from: OrderStatus, to: string): OrderStatus {
  if (!SETTABLE.includes(to as OrderStatus)) {
    throw new SandboxError(400, "invalid_request", `status must be one of ${SETTABLE.join(", ")}`);
  }
  const target = to as OrderStatus;
  if (TERMINAL.includes(from)) throw new SandboxError(409, "invalid_transition", `order is ${from}, a terminal state`);
  if (target === "CANCELLED" || NEXT[from] === target) return target;
  throw new SandboxError(409, "invalid_transition", `cannot move an order from ${from} to ${target}`);
}

/** Throws unless the order may be refunded: paid and not refunded yet. */
export function checkRefund(order: Pick<Order, "paidAt" | "status">): void {
  if (order.paidAt === null) throw new SandboxError(409, "not_refundable", "order is not paid");
  if (order.status === "REFUNDED") throw new SandboxError(409, "not_refundable", "order is already refunded");
}

/** The next forward step, for the simulation. */
export const nextStatus = (from: OrderStatus): OrderStatus | undefined => NEXT[from];
