import type { MirrorKind, MirrorRecord } from "./store.js";

/**
 * How far along its state machine a record is (docs/upstream.md): every allowed order
 * transition increases the rank, and a cancelled booking never comes back. The mirror refuses a
 * write with a lower rank than it holds.
 */
const ORDER_RANK: Record<string, number> = {
  PENDING: 0,
  CONFIRMED: 1,
  PREPARING: 2,
  READY: 3,
  DELIVERED: 4,
  CANCELLED: 5,
  REFUNDED: 6,
};
const BOOKING_RANK: Record<string, number> = { CANCELLED: 1 };

export function rankOf(kind: MirrorKind, record: MirrorRecord): number {
  const status = typeof record.status === "string" ? record.status : "";
  if (kind === "orders") return ORDER_RANK[status] ?? 0;
  if (kind === "bookings") return BOOKING_RANK[status] ?? 0;
  return 0;
}
