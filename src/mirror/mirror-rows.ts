import type { Insertable } from "kysely";
import type { BookingsTable, MenuItemsTable, OrderItemsTable, OrdersTable, ReviewsTable } from "./database-schema.js";
import { idProblem, MAX_RECORD_ID_LENGTH } from "./id-text.js";
import { MirrorRecordError } from "./mirror-record-error.js";
import {
  findUnstorableString,
  fitsKey,
  isCalendarDate,
  isInt32,
  isTimeOfDay,
  isTimestamp,
  MAX_DECIMAL_CHARS,
  MAX_KEY_BYTES,
  unstorableString,
  type UnstorableReason,
} from "./postgres-values.js";
import { rankOf } from "./rank.js";
import type { MirrorKind, MirrorRecord } from "./store.js";

// A record in the API's shape → the row of its table. Typed columns are read from the record
// with a check each, and every value PostgreSQL would refuse (NUL or a lone surrogate in any
// string, raw included; 2026-02-30; an integer beyond int32; an id too long for its index) is
// caught here, per record, before any SQL runs; the record itself goes to `raw` unchanged,
// unknown fields included. Money leaves here as a decimal string:
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

function fieldReader(kind: MirrorKind, record: Record<string, unknown>, id: string | undefined, prefix = "") {
  const fail = (field: string, expected: string, reason: UnstorableReason = "invalid_field"): never => {
    throw new MirrorRecordError(kind, id, prefix + field, expected, reason);
  };
  /** `ok` answers true, or the reason the present value is refused ("invalid_field": wrong type or form). */
  const get = (field: string, nullable: boolean, expected: string, ok: (v: unknown) => true | UnstorableReason) => {
    const value = record[field];
    if (value === null || value === undefined) return nullable ? null : fail(field, expected);
    const verdict = ok(value);
    return verdict === true ? value : fail(field, expected + (nullable ? " or null" : ""), verdict);
  };
  const check = (test: boolean, reason: UnstorableReason = "invalid_field") => (test ? true : reason);
  const isString = (v: unknown): v is string => typeof v === "string";
  const text = (field: string) => get(field, false, "a non-empty string", (v) => check(isString(v) && v !== "")) as string;
  const optText = (field: string) => get(field, true, "a string", (v) => check(isString(v))) as string | null;
  /** A text column that is indexed: bounded in bytes (a btree entry has a size limit). */
  const key = (field: string) =>
    get(field, false, `a non-empty string of at most ${MAX_KEY_BYTES} bytes`, (v) =>
      !isString(v) || v === "" ? "invalid_field" : check(fitsKey(v), "too_long"),
    ) as string;
  const isDecimal = (v: unknown) =>
    typeof v === "number"
      ? check(Number.isFinite(v))
      : !isString(v) || !DECIMAL.test(v)
        ? "invalid_field"
        : check(v.length <= MAX_DECIMAL_CHARS, "out_of_range");
  const decimal = (field: string) => {
    const v = get(field, false, "a decimal amount (number or decimal string)", isDecimal) as number | string;
    return String(v);
  };
  const optDecimal = (field: string) => {
    const v = get(field, true, "a decimal amount (number or decimal string)", isDecimal) as number | string | null;
    return v === null ? null : String(v);
  };
  const isInteger = (v: unknown) => (Number.isSafeInteger(v) ? check(isInt32(v), "out_of_range") : "invalid_field");
  const integer = (field: string) => get(field, false, "an integer within ±2^31", isInteger) as number;
  const optInteger = (field: string) => get(field, true, "an integer within ±2^31", isInteger) as number | null;
  const isTimestampValue = (v: unknown) => (isString(v) ? check(isTimestamp(v), "invalid_timestamp") : "invalid_field");
  const timestamp = (field: string) => get(field, false, "an ISO-8601 timestamp", isTimestampValue) as string;
  const optTimestamp = (field: string) => get(field, true, "an ISO-8601 timestamp", isTimestampValue) as string | null;
  // Spec part 2: a booking's date is "an ISO 8601 timestamp of the booking day": the day is the
  // date as written (its first ten characters), never shifted by a time zone.
  const date = (field: string) =>
    (
      get(field, false, "a date (YYYY-MM-DD, or an ISO 8601 timestamp of the day)", (v) =>
        isString(v) ? check(isCalendarDate(v) || isTimestamp(v), "invalid_date") : "invalid_field",
      ) as string
    ).slice(0, 10);
  const time = (field: string) =>
    get(field, false, "a time HH:MM", (v) => (isString(v) ? check(isTimeOfDay(v), "invalid_time") : "invalid_field")) as string;
  const optTextArray = (field: string) =>
    get(field, true, "an array of strings", (v) => check(Array.isArray(v) && v.every((s) => typeof s === "string"))) as string[] | null;
  return { fail, text, optText, key, decimal, optDecimal, integer, optInteger, timestamp, optTimestamp, date, time, optTextArray };
}

function orderItems(record: MirrorRecord, orderId: string): Insertable<OrderItemsTable>[] {
  const items = record.items;
  if (!Array.isArray(items)) throw new MirrorRecordError("orders", orderId, "items", "an array of line items");
  const seen = new Set<string>();
  return items.map((item: unknown, position) => {
    if (typeof item !== "object" || item === null) throw new MirrorRecordError("orders", orderId, `items[${position}]`, "an object");
    const f = fieldReader("orders", item as Record<string, unknown>, orderId, `items[${position}].`);
    const id = f.key("id");
    if (seen.has(id)) f.fail("id", "unique within the order");
    seen.add(id);
    return {
      order_id: orderId,
      id,
      menu_item_id: f.key("menuItemId"),
      name: f.text("name"),
      quantity: f.integer("quantity"),
      price: f.decimal("price"),
      notes: f.optText("notes"),
      position,
    };
  });
}

/**
 * A record's id and restaurant id as the mirror can hold and the routes can address them: a
 * non-empty id within an index's size, no NUL or lone surrogate in either (PostgreSQL text holds
 * neither), and the id rule (id-text.ts) that the edge applies to event ids. Checked first, so what
 * a refused record is filed under is always its id's own problem.
 */
function checkIdentity(f: ReturnType<typeof fieldReader>, record: Partial<MirrorRecord>): string {
  if (typeof record.id !== "string" || record.id === "") f.fail("id", "a non-empty string");
  const id = f.key("id");
  for (const field of ["id", "restaurantId"] as const) {
    const value = record[field];
    const reason = typeof value === "string" ? unstorableString(value) : undefined;
    if (reason) f.fail(field, "free of NUL characters and lone surrogates", reason);
  }
  const problem = idProblem(id, MAX_RECORD_ID_LENGTH);
  if (problem) f.fail("id", `an id the operator routes can address (it ${problem})`);
  return id;
}

/**
 * Why the mirror cannot hold a record of this id and restaurant (the check every record's write
 * makes first), or undefined when it can: what a refresh asks of the ids events named before it
 * reads the mirror or the API for them.
 */
export function identityProblem(kind: MirrorKind, identity: { id: string; restaurantId: string }): MirrorRecordError | undefined {
  try {
    checkIdentity(fieldReader(kind, identity, identity.id), identity);
    return undefined;
  } catch (err) {
    if (err instanceof MirrorRecordError) return err;
    throw err;
  }
}

/** Checks one record and builds its row; throws MirrorRecordError naming the field and the reason. */
export function prepareRecord(kind: MirrorKind, record: MirrorRecord, readAt: Date): PreparedRecord {
  // Typed callers cannot pass a non-object; JavaScript callers and bad casts can.
  const value: unknown = record;
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new MirrorRecordError(kind, undefined, "(record)", "an object");
  const f = fieldReader(kind, record, typeof record.id === "string" && record.id !== "" ? record.id : undefined);
  const id = checkIdentity(f, record);
  // Any string anywhere (raw is jsonb, which refuses what text refuses), so typed columns need not check again.
  const unstorable = findUnstorableString(record);
  if (unstorable) f.fail(unstorable.path, "free of NUL characters and lone surrogates", unstorable.reason);
  const rank = rankOf(kind, record);
  const common = { id, restaurant_id: f.key("restaurantId"), raw: JSON.stringify(record), rank, read_at: readAt } satisfies Partial<
    Record<Bookkeeping | "id" | "restaurant_id", unknown>
  >;
  switch (kind) {
    case "orders": {
      const row: Insertable<OrdersTable> = {
        ...common,
        booking_id: f.optText("bookingId"),
        type: f.text("type"),
        status: f.key("status"),
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
        status: f.key("status"),
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
