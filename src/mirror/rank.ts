import { ORDER_STATUS_RANK } from "../upstream/models.js";
import type { MirrorKind, MirrorRecord } from "./store.js";

/**
 * How far along its state machine a record is (docs/upstream.md): every allowed order
 * transition increases the rank, and a cancelled booking never comes back. The mirror refuses a
 * write with a lower rank than it holds.
 */
const ORDER_RANK: Record<string, number> = ORDER_STATUS_RANK;
const BOOKING_RANK: Record<string, number> = { CANCELLED: 1 };

export function rankOf(kind: MirrorKind, record: MirrorRecord): number {
  const status = typeof record.status === "string" ? record.status : "";
  if (kind === "orders") return ORDER_RANK[status] ?? 0;
  if (kind === "bookings") return BOOKING_RANK[status] ?? 0;
  return 0;
}
