import * as z from "zod";

// The API's resources (spec part 2, decisions in docs/upstream.md). Strict on the fields the
// spec shows, lenient on the rest: `z.looseObject` keeps fields we do not know (they reach the
// mirror unchanged), and where the spec leaves a value open (booking status) any string goes.

/** The spec's page size bound (part 8): also what a page without `limit` may hold at most. */
export const MAX_LIMIT = 100;

// ---- The order state machine (spec part 3; where the spec shows no rule, docs/upstream.md's
// reading). Its one home: the mirror's rank, the sync's open and final lists and where a status
// may lead, the step-aware client's "already done" and the refund event's status derive from here.

/** Every order status, in rank order (ORDER_STATUS_RANK). */
export const ORDER_STATUSES = ["PENDING", "CONFIRMED", "PREPARING", "READY", "DELIVERED", "CANCELLED", "REFUNDED"] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

/** The values the status operation accepts (part 3 rule 1): never PENDING or REFUNDED. */
export const SETTABLE_ORDER_STATUSES = ["CONFIRMED", "PREPARING", "READY", "DELIVERED", "CANCELLED"] as const;
export type SettableOrderStatus = (typeof SETTABLE_ORDER_STATUSES)[number];

/** The forward line the status operation moves an order along, one step at a time; CANCELLED and REFUNDED are off it. */
export const ORDER_FORWARD_STEPS = ["PENDING", "CONFIRMED", "PREPARING", "READY", "DELIVERED"] as const satisfies readonly OrderStatus[];

/** Terminal for the status operation (rule 4 not shown: docs/upstream.md's reading); a refund may still follow. */
export const FINAL_ORDER_STATUSES = ["DELIVERED", "CANCELLED", "REFUNDED"] as const satisfies readonly OrderStatus[];

/** The statuses an order can still move out of by the status operation. */
export const OPEN_ORDER_STATUSES: readonly OrderStatus[] = ORDER_STATUSES.filter(
  (s) => !(FINAL_ORDER_STATUSES as readonly string[]).includes(s),
);

/** What the refund operation leads to, from any status of a paid order but itself (rule 2: only it does). */
export const REFUNDED_STATUS = "REFUNDED" satisfies OrderStatus;

export const ORDER_TYPES = ["DINE_IN", "TAKEAWAY", "DELIVERY"] as const;
export type OrderType = (typeof ORDER_TYPES)[number];

/**
 * Every allowed order transition strictly increases this rank (docs/upstream.md), so a record
 * with a lower rank than the one held is an older view and must not overwrite it.
 */
export const ORDER_STATUS_RANK = Object.fromEntries(ORDER_STATUSES.map((s, rank) => [s, rank])) as Record<OrderStatus, number>;

/** An order status's ORDER_STATUS_RANK; undefined for a value the spec does not show (never a rank). */
export const orderStatusRank = (status: unknown): number | undefined =>
  typeof status === "string" && Object.hasOwn(ORDER_STATUS_RANK, status) ? ORDER_STATUS_RANK[status as OrderStatus] : undefined;

/**
 * The statuses an order in `status` may be in now, the carried one first: from an open one every
 * status of a higher rank (the forward steps, CANCELLED, REFUNDED from a paid order); from a final
 * one only a refund (none from REFUNDED). Undefined for a status the spec does not show.
 */
export function orderStatusesFrom(status: string): OrderStatus[] | undefined {
  const rank = orderStatusRank(status);
  if (rank === undefined) return undefined;
  const at = status as OrderStatus;
  if ((FINAL_ORDER_STATUSES as readonly string[]).includes(at)) return at === REFUNDED_STATUS ? [at] : [at, REFUNDED_STATUS];
  return ORDER_STATUSES.filter((s) => ORDER_STATUS_RANK[s] >= rank);
}

/** A booking's rank (the spec shows no more of its machine): a cancelled booking never comes back. */
export const bookingStatusRank = (status: unknown): number => (status === "CANCELLED" ? 1 : 0);

// ---- The records

const orderItemSchema = z.looseObject({
  id: z.string(),
  menuItemId: z.string(),
  name: z.string(),
  quantity: z.number().int(),
  price: z.number(),
  notes: z.string().nullable(),
});

export const orderSchema = z.looseObject({
  id: z.string(),
  restaurantId: z.string(),
  bookingId: z.string().nullable(),
  type: z.enum(ORDER_TYPES),
  status: z.enum(ORDER_STATUSES),
  subtotal: z.number(),
  tax: z.number(),
  tip: z.number(),
  total: z.number(),
  currency: z.string(),
  paidAt: z.string().nullable(),
  refundedAt: z.string().nullable(),
  createdAt: z.string(),
  items: z.array(orderItemSchema),
});

export const bookingSchema = z.looseObject({
  id: z.string(),
  restaurantId: z.string(),
  date: z.string(),
  time: z.string(),
  partySize: z.number().int(),
  // The spec names CONFIRMED and "a cancelled state" but not the full set.
  status: z.string(),
  confirmCode: z.string(),
  diner: z.looseObject({ name: z.string(), email: z.string() }),
});

// The spec names only price, allergens, tags and stock; their types come from docs/upstream.md.
export const menuItemSchema = z.looseObject({
  id: z.string(),
  restaurantId: z.string(),
  price: z.number(),
  allergens: z.array(z.string()),
  tags: z.array(z.string()),
  /** null: stock is not tracked for this item. */
  stock: z.number().nullable(),
});

// No review field is shown by the spec, and there is no review endpoint: keep everything.
export const reviewSchema = z.looseObject({ id: z.string(), restaurantId: z.string() });

/** A list page whose records are checked one by one (`splitRecords`), so one bad record never fails the page. */
export const looseRecordsPageSchema = z.object({ data: z.array(z.unknown()), nextCursor: z.string().nullable() });

/** A record of a page that does not have the shape the spec promises: kept aside with the first issue. */
export interface RefusedRecord {
  record: unknown;
  /** The path of the first issue (`status`, `items.0.price`). */
  field: string;
  message: string;
}

/** The records of a page that have the item's shape, and the others with why. */
export function splitRecords<T>(item: z.ZodType<T>, data: readonly unknown[]): { data: T[]; refused: RefusedRecord[] } {
  const valid: T[] = [];
  const refused: RefusedRecord[] = [];
  for (const record of data) {
    const parsed = item.safeParse(record);
    if (parsed.success) valid.push(parsed.data);
    else {
      const issue = parsed.error.issues[0];
      const path = issue?.path.join(".") ?? "";
      refused.push({ record, field: path === "" ? "(record)" : path, message: issue?.message ?? "invalid" });
    }
  }
  return { data: valid, refused };
}

export type Order = z.infer<typeof orderSchema>;
export type OrderItem = z.infer<typeof orderItemSchema>;
export type Booking = z.infer<typeof bookingSchema>;
export type MenuItem = z.infer<typeof menuItemSchema>;
export type Review = z.infer<typeof reviewSchema>;
export interface Page<T> {
  data: T[];
  nextCursor: string | null;
}

/** Body of POST /api/v1/bookings (docs/upstream.md). */
export interface CreateBookingInput {
  restaurantId: string;
  /** YYYY-MM-DD */
  date: string;
  /** HH:MM */
  time: string;
  /** 1..50 */
  partySize: number;
  diner: { name: string; email: string };
}
