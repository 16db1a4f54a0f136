import { SandboxError, type Order, type OrderStatus } from "./types.js";

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
