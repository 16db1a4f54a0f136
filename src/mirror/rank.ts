import { bookingStatusRank, orderStatusRank } from "../upstream/models.js";
import type { MirrorKind, MirrorRecord } from "./store.js";

/**
 * How far along its state machine a record is (docs/upstream.md): every allowed order
 * transition increases the rank, and a cancelled booking never comes back. The mirror refuses a
 * write with a lower rank than it holds.
 */
export function rankOf(kind: MirrorKind, record: MirrorRecord): number {
  if (kind === "orders") return orderStatusRank(record.status) ?? 0;
  if (kind === "bookings") return bookingStatusRank(record.status);
  return 0;
}
