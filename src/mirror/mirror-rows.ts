import type { Insertable } from "kysely";
import type { BookingsTable, MenuItemsTable, OrderItemsTable, OrdersTable, ReviewsTable } from "./database-schema.js";
import { MirrorRecordError } from "./mirror-record-error.js";
import { rankOf } from "./rank.js";
import type { MirrorKind, MirrorRecord } from "./store.js";

// A record in the API's shape → the row of its table. Typed columns are read from the record
// with a check each (a wrong type fails the whole batch before anything is written); the record
// itself goes to `raw` unchanged, unknown fields included. Money leaves here as a decimal string:
// a JSON number's shortest form (what the API sent, as JavaScript parsed it) or the string given.

export const TABLE_OF = { orders: "orders", bookings: "bookings", "menu-items": "menu_items", reviews: "reviews" } as const;
export type MirrorTable = (typeof TABLE_OF)[MirrorKind];

type Bookkeeping = "raw" | "rank" | "read_at" | "synced_at";
export type MirrorRow = Insertable<OrdersTable> | Insertable<BookingsTable> | Insertable<MenuItemsTable> | Insertable<ReviewsTable>;

export interface PreparedRecord {
  id: string;
  rank: number;
  row: MirrorRow;
  /** Orders only: the line items that replace the stored ones. */
  items?: Insertable<OrderItemsTable>[];
}

const DECIMAL = /^-?\d+(\.\d+)?$/;
const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const TIME = /^\d{2}:\d{2}(:\d{2})?$/;

function fieldReader(kind: MirrorKind, record: Record<string, unknown>, id: string | undefined, prefix = "") {
  const fail = (field: string, expected: string): never => {
    throw new MirrorRecordError(kind, id, prefix + field, expected);
  };
  const get = (field: string, nullable: boolean, expected: string, ok: (v: unknown) => boolean) => {
    const value = record[field];
    if (value === null || value === undefined) return nullable ? null : fail(field, expected);
    return ok(value) ? value : fail(field, expected + (nullable ? " or null" : ""));
  };
  const text = (field: string) => get(field, false, "a non-empty string", (v) => typeof v === "string" && v !== "") as string;
  const optText = (field: string) => get(field, true, "a string", (v) => typeof v === "string") as string | null;
  const isDecimal = (v: unknown) => (typeof v === "number" && Number.isFinite(v)) || (typeof v === "string" && DECIMAL.test(v));
  const decimal = (field: string) => {
    const v = get(field, false, "a decimal amount (number or decimal string)", isDecimal) as number | string;
    return String(v);
  };
  const optDecimal = (field: string) => {
    const v = get(field, true, "a decimal amount (number or decimal string)", isDecimal) as number | string | null;
    return v === null ? null : String(v);
  };
  const integer = (field: string) => get(field, false, "an integer", Number.isSafeInteger) as number;
  const optInteger = (field: string) => get(field, true, "an integer", Number.isSafeInteger) as number | null;
  const isTimestamp = (v: unknown) => typeof v === "string" && ISO_TIMESTAMP.test(v) && !Number.isNaN(Date.parse(v));
  const timestamp = (field: string) => get(field, false, "an ISO-8601 timestamp", isTimestamp) as string;
  const optTimestamp = (field: string) => get(field, true, "an ISO-8601 timestamp", isTimestamp) as string | null;
  // Spec part 2: a booking's date is "an ISO 8601 timestamp of the booking day": the day is the
  // date as written (its first ten characters), never shifted by a time zone.
  const date = (field: string) =>
    (
      get(
        field,
        false,
        "a date (YYYY-MM-DD, or an ISO 8601 timestamp of the day)",
        (v) => typeof v === "string" && (DATE.test(v) || isTimestamp(v)) && !Number.isNaN(Date.parse(v.slice(0, 10))),
      ) as string
    ).slice(0, 10);
  const time = (field: string) => get(field, false, "a time HH:MM", (v) => typeof v === "string" && TIME.test(v)) as string;
  const optTextArray = (field: string) =>
    get(field, true, "an array of strings", (v) => Array.isArray(v) && v.every((s) => typeof s === "string")) as string[] | null;
  return { fail, text, optText, decimal, optDecimal, integer, optInteger, timestamp, optTimestamp, date, time, optTextArray };
}

function orderItems(record: MirrorRecord, orderId: string): Insertable<OrderItemsTable>[] {
  const items = record.items;
  if (!Array.isArray(items)) throw new MirrorRecordError("orders", orderId, "items", "an array of line items");
  const seen = new Set<string>();
  return items.map((item: unknown, position) => {
    if (typeof item !== "object" || item === null) throw new MirrorRecordError("orders", orderId, `items[${position}]`, "an object");
    const f = fieldReader("orders", item as Record<string, unknown>, orderId, `items[${position}].`);
    const id = f.text("id");
    if (seen.has(id)) f.fail("id", "unique within the order");
    seen.add(id);
    return {
      order_id: orderId,
      id,
      menu_item_id: f.text("menuItemId"),
      name: f.text("name"),
      quantity: f.integer("quantity"),
      price: f.decimal("price"),
      notes: f.optText("notes"),
      position,
    };
  });
}

/** Checks one record and builds its row; throws MirrorRecordError naming the field. */
export function prepareRecord(kind: MirrorKind, record: MirrorRecord, readAt: Date): PreparedRecord {
  // Typed callers cannot pass a non-object; JavaScript callers and bad casts can.
  const value: unknown = record;
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new MirrorRecordError(kind, undefined, "(record)", "an object");
  const id = typeof record.id === "string" && record.id !== "" ? record.id : undefined;
  const f = fieldReader(kind, record, id);
  if (id === undefined) return f.fail("id", "a non-empty string");
  const rank = rankOf(kind, record);
  const common = { id, restaurant_id: f.text("restaurantId"), raw: JSON.stringify(record), rank, read_at: readAt } satisfies Partial<
    Record<Bookkeeping | "id" | "restaurant_id", unknown>
  >;
  switch (kind) {
    case "orders": {
      const row: Insertable<OrdersTable> = {
        ...common,
        booking_id: f.optText("bookingId"),
        type: f.text("type"),
        status: f.text("status"),
        subtotal: f.decimal("subtotal"),
        tax: f.decimal("tax"),
        tip: f.decimal("tip"),
        total: f.decimal("total"),
        currency: f.text("currency"),
        paid_at: f.optTimestamp("paidAt"),
        refunded_at: f.optTimestamp("refundedAt"),
        created_at: f.timestamp("createdAt"),
      };
      return { id, rank, row, items: orderItems(record, id) };
    }
    case "bookings": {
      const diner = record.diner;
      if (typeof diner !== "object" || diner === null) return f.fail("diner", "an object with name and email");
      const d = fieldReader(kind, diner as Record<string, unknown>, id, "diner.");
      const row: Insertable<BookingsTable> = {
        ...common,
        date: f.date("date"),
        time: f.time("time"),
        party_size: f.integer("partySize"),
        status: f.text("status"),
        confirm_code: f.text("confirmCode"),
        diner_name: d.text("name"),
        diner_email: d.text("email"),
      };
      return { id, rank, row };
    }
    case "menu-items": {
      const row: Insertable<MenuItemsTable> = {
        ...common,
        name: f.optText("name"),
        price: f.optDecimal("price"),
        allergens: f.optTextArray("allergens"),
        tags: f.optTextArray("tags"),
        stock: f.optInteger("stock"),
      };
      return { id, rank, row };
    }
    case "reviews":
      return { id, rank, row: common };
  }
}
