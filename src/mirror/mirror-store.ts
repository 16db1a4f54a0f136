import { type Transaction, sql, type Kysely, type Insertable } from "kysely";
import type { DatabaseSchema, BookingsTable, MenuItemsTable, OrderItemsTable, OrdersTable, ReviewsTable } from "./database.js";
import { fromExcluded } from "./database.js";
import { DEFAULT_ACCOUNT } from "../config/defaults.js";
import {
  type RefusedUpstreamRecord,
  type RejectedRecord,
  type RejectionRow,
  type UnlistedRecord,
  toRejection,
  type Rejection,
  clearSetAside,
  listRejections,
  recordRejections,
  listUnlisted,
  recordUnlisted,
} from "./set-aside-records.js";
import { bookingStatusRank, ORDER_STATUSES, orderStatusRank } from "../upstream/models.js";
import { isCalendarDate, isTimeOfDay, isTimestamp, isValidDate, parseIsoInstant } from "../base/iso-time.js";
import {
  cursorText,
  toCursor,
  findUnstorableString,
  fitsKey,
  isInt32,
  MAX_DECIMAL_CHARS,
  MAX_KEY_BYTES,
  unstorableString,
  type UnstorableReason,
} from "./values.js";
import { tableOf, type MirrorKind } from "./kinds.js";
import { idProblem, MAX_RECORD_ID_LENGTH } from "../base/text.js";
import { checkedId, checkLimit, checkListParams, MirrorFilterError, MirrorRecordError, withOperatorTimeout } from "./errors.js";
import { expectDefined } from "../errors.js";

/** A record in the API's own shape (camelCase, amounts as the API gave them, unknown fields kept). */
export interface MirrorRecord {
  id: string;
  restaurantId: string;
  [field: string]: unknown;
}

/** One stored record whose content a write changed (bookkeeping-only writes are not changes). */
export interface MirrorChange {
  kind: MirrorKind;
  id: string;
  /** The stored record before the write; null when the mirror had never seen it. */
  before: MirrorRecord | null;
  after: MirrorRecord;
  /** Top-level field names whose values differ (every field of `after` on first sight), sorted. */
  changed: string[];
}

export interface UpsertResult {
  /** Records written: content changed, or the same content confirmed by a later read (read_at advanced). */
  written: number;
  /** Records refused: the mirror holds a copy further along, read later, or read at the same instant. */
  skipped: number;
  /** The written records whose content changed, in id order. */
  changes: MirrorChange[];
  /**
   * Records the mirror cannot hold (a value PostgreSQL refuses, a field missing or mistyped): set
   * aside in the rejected records with their reason, while the rest of the batch was written.
   */
  rejected: RejectedRecord[];
}

/** Runs inside the upsert's transaction, after the rows are written; query through `tx` only. */
type OnMirrorChanges = (tx: Transaction<DatabaseSchema>, changes: readonly MirrorChange[]) => Promise<void>;

interface UpsertOptions {
  /** Records of the same read that the client refused: set aside with the write's own (reason `invalid_field`). */
  refused?: readonly RefusedUpstreamRecord[];
  /**
   * Called in each transaction of the upsert that changed something (the change-event outbox goes
   * here): a write of more than 100 ids is several transactions (IDS_PER_TRANSACTION). A throw rolls
   * that transaction back and fails the upsert; the transactions before it stay committed.
   */
  onChanges?: OnMirrorChanges;
}

/** Filters of `list`; invalid values raise MirrorFilterError (an HTTP 400). */
export interface MirrorListFilter {
  restaurantId?: string;
  /** orders: one of the API's order statuses; bookings: an upper-case status; other kinds: none. */
  status?: string;
  /** Inclusive lower bound: orders' createdAt (ISO-8601 date or timestamp), bookings' date (YYYY-MM-DD). */
  from?: string;
  /** Exclusive upper bound, same format as `from`. */
  to?: string;
  /** 1..100, default 50. */
  limit?: number;
  /** `nextCursor` of the previous page. */
  cursor?: string;
}

export interface MirrorPage {
  /** Records in id order. */
  data: MirrorRecord[];
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

/**
 * The mirror's storage (PostgreSQL: createPostgresMirror below). The guarantee every
 * implementation keeps: a stored record is replaced only by a copy that is further along its
 * state machine (rankOf) or, at the same rank, read strictly later by the shared
 * clock (`clock()`, read per attempt as the upstream GET is sent, after its rate-limit slot was
 * taken). On an exact tie the stored copy stays.
 * So duplicated, late or reordered refreshes can never regress the mirror.
 */
export interface MirrorStore {
  /** The account (company) whose records this store reads and writes: every query is scoped to it. */
  readonly account: string;
  /**
   * The clock shared by every worker: a lower bound of the database's (`createSharedClock`). Read
   * it as the upstream read is sent (ApiClient's `clock` option).
   */
  clock(): Promise<Date>;
  upsert(kind: MirrorKind, records: readonly MirrorRecord[], readAt: Date, options?: UpsertOptions): Promise<UpsertResult>;
  get(kind: MirrorKind, id: string): Promise<MirrorRecord | undefined>;
  list(kind: MirrorKind, filter?: MirrorListFilter): Promise<MirrorPage>;
  /** Every record of a kind in id order (tests and reconciliation checks; unbounded). */
  all(kind: MirrorKind): Promise<MirrorRecord[]>;
  /** Epoch ms of the last write of a kind (database clock), for a mirror-lag metric. */
  lastWriteAt(kind: MirrorKind): Promise<number | undefined>;
  /** The rejected records (of a kind, or all), by kind and id: what the mirror could not hold, and why. */
  rejections(kind?: MirrorKind): Promise<RejectionRow[]>;
  /**
   * For each query, how many stored orders were created after `since` (of one restaurant, or all),
   * counted up to its `max`: where a record sits in a newest-first list, as far as the mirror knows
   * (refresh planning). With `status`, only orders the mirror holds in that status (where it sits
   * in a list filtered by it). One statement for them all: a refresh job's ids cost one query.
   */
  countOrdersNewer(queries: readonly { since: Date; restaurantId?: string; status?: string; max: number }[]): Promise<number[]>;
  /**
   * Stored bookings per day (YYYY-MM-DD) from `from` to `to`, inclusive, company-wide: what a
   * booking list by date window would page through, as far as the mirror knows (refresh planning).
   */
  countBookingsByDay(from: string, to: string): Promise<Map<string, number>>;
  /** The same per restaurant, for these restaurants only: restaurant id → day → bookings. */
  countBookingsByRestaurantDay(from: string, to: string, restaurantIds: readonly string[]): Promise<Map<string, Map<string, number>>>;
  /** Reports an id the API never listed in time (a row until the record is written). */
  recordUnlisted(row: UnlistedRecord): Promise<void>;
  /** The ids given up on (of a kind, or all), by kind and id. */
  unlisted(kind?: MirrorKind): Promise<UnlistedRecord[]>;
}

const DEFAULT_LIMIT = 50;
/** The most records one page of a mirror list holds (the sync's own reads of the mirror ask for it). */
export const MIRROR_MAX_LIMIT = 100;

/** A filter that passed every check; `after` is the id the cursor points past. */
export interface ValidFilter extends Omit<MirrorListFilter, "limit" | "cursor"> {
  limit: number;
  after?: string;
}

const BOOKING_STATUS = /^[A-Z][A-Z_]{0,39}$/;
const CURSOR_PREFIX = "id:";

export const encodeCursor = (lastId: string) => toCursor(CURSOR_PREFIX + lastId);

function decodeCursor(cursor: string): string {
  const text = cursorText(cursor, 8000) ?? "";
  const id = text.startsWith(CURSOR_PREFIX) ? text.slice(CURSOR_PREFIX.length) : "";
  const problem = idProblem(id, MAX_RECORD_ID_LENGTH);
  if (problem) throw new MirrorFilterError("cursor", `cursor is not one this API returned (its id ${problem}); pass nextCursor unchanged`);
  return id;
}

/** A record id from a path (GET /mirror/{kind}/{id}): one the database could hold, else a 400 naming why. */
export const validateRecordId = (id: string): string => checkedId("id", id, MAX_RECORD_ID_LENGTH);

/** A from/to bound of `kind`: a real calendar date (bookings), or a date or timestamp with zone (orders). */
function checkBound(kind: MirrorKind, bound: "from" | "to", value: unknown): string {
  const range = RANGE_FIELD[kind];
  if (!range) throw new MirrorFilterError(bound, `${kind} cannot be filtered by date (from/to apply to orders and bookings)`);
  if (typeof value !== "string") throw new MirrorFilterError(bound, `${bound} must be ${range.describe}`);
  const parsed = parseIsoInstant(value);
  if (!parsed.ok) throw new MirrorFilterError(bound, `${bound} ${parsed.problem} (${range.describe})`);
  if (range.dateOnly && !parsed.dateOnly) throw new MirrorFilterError(bound, `${bound} must be ${range.describe}`);
  return value;
}

/** The column `from`/`to` bound, per kind: orders by creation time, bookings by their date, others none. */
const RANGE_FIELD: Partial<Record<MirrorKind, { column: "created_at" | "date"; dateOnly: boolean; describe: string }>> = {
  orders: {
    column: "created_at",
    dateOnly: false,
    describe: "an ISO-8601 date or timestamp with zone (2026-11-20 or 2026-11-20T08:00:00Z)",
  },
  bookings: { column: "date", dateOnly: true, describe: "a date YYYY-MM-DD" },
};

function checkStatus(kind: MirrorKind, status: string): string {
  if (kind === "orders" && !(ORDER_STATUSES as readonly string[]).includes(status))
    throw new MirrorFilterError("status", `status for orders must be one of ${ORDER_STATUSES.join(", ")}`);
  if (kind === "bookings" && !BOOKING_STATUS.test(status))
    throw new MirrorFilterError("status", "status for bookings must be an upper-case status such as CONFIRMED or CANCELLED");
  if (kind !== "orders" && kind !== "bookings") throw new MirrorFilterError("status", `${kind} have no status to filter by`);
  return status;
}

/** Checks a list filter against its kind; throws MirrorFilterError naming the first bad field. */
export function validateFilter(kind: MirrorKind, filter: MirrorListFilter = {}): ValidFilter {
  const valid: ValidFilter = { limit: DEFAULT_LIMIT };
  if (filter.restaurantId !== undefined) valid.restaurantId = checkedId("restaurantId", filter.restaurantId);
  if (filter.status !== undefined) valid.status = checkStatus(kind, filter.status);
  for (const bound of ["from", "to"] as const) {
    if (filter[bound] !== undefined) valid[bound] = checkBound(kind, bound, filter[bound]);
  }
  valid.limit = checkLimit(filter.limit, MIRROR_MAX_LIMIT) ?? valid.limit;
  if (filter.cursor !== undefined) valid.after = decodeCursor(filter.cursor);
  return valid;
}

/**
 * A list filter from URL query parameters (the HTTP layer's input): `limit` from text, the rest
 * as given. Unknown parameters are refused too, so a typo is a 400 rather than an unfiltered list.
 */
/** The parameters GET /mirror/{kind} takes besides `account` (the operator API's document lists these). */
export const MIRROR_QUERY_PARAMS = ["restaurantId", "status", "from", "to", "limit", "cursor"] as const;

export function filterFromQuery(query: Record<string, string | undefined>): MirrorListFilter {
  const limit = checkListParams(query, MIRROR_QUERY_PARAMS, MIRROR_MAX_LIMIT);
  const filter: MirrorListFilter = Object.fromEntries(Object.entries(query).filter(([k, v]) => v !== undefined && k !== "limit"));
  if (limit !== undefined) filter.limit = limit;
  return filter;
}

/**
 * JSON bytes of records in one page at most (GET /mirror/{kind}): a page stops adding records
 * before it would pass this, so three 5 MB orders come one a page, not 15 MB at once. A record
 * larger than the budget alone is still answered whole, alone on its page.
 */
export const MIRROR_PAGE_BYTES = 1024 * 1024;

/** The leading rows whose sizes add up to at most `budget` bytes, and at least one row: a page of them is never read whole first. */
export function fittingRows<T>(rows: readonly T[], size: (row: T) => number, budget = MIRROR_PAGE_BYTES): T[] {
  const page: T[] = [];
  let bytes = 0;
  for (const row of rows) {
    const bytesOfRow = size(row);
    if (page.length > 0 && bytes + bytesOfRow > budget) break;
    page.push(row);
    bytes += bytesOfRow;
  }
  return page;
}

/** A date-only bound means midnight UTC, whatever the session's TimeZone. */
const utc = (bound: string) => (bound.length === 10 ? `${bound}T00:00:00Z` : bound);

/**
 * One page of a kind in id order, bounded by `limit` and by MIRROR_PAGE_BYTES (at least one record):
 * the ids and sizes are read first, then the records that fit, so an oversized page is never
 * read whole. `nextCursor` continues after the last record answered.
 */
async function listMirrorPage(
  db: AnyMirrorDb,
  account: string,
  kind: MirrorKind,
  filter: MirrorListFilter | undefined,
): Promise<MirrorPage> {
  const f = validateFilter(kind, filter);
  // The four mirror tables share the columns used here: typed as `orders`, run on the kind's table.
  const table = tableOf(kind);
  let query = db
    .selectFrom(table)
    .select(["id", sql<number | string>`octet_length(raw::text)`.as("bytes")])
    .where("account_id", "=", account)
    .orderBy("id")
    .limit(f.limit + 1);
  if (f.restaurantId !== undefined) query = query.where("restaurant_id", "=", f.restaurantId);
  if (f.status !== undefined) query = query.where("status", "=", f.status);
  // Half-open ranges: from inclusive, to exclusive (pages of days compose without overlap).
  const range = RANGE_FIELD[kind];
  if (range && f.from !== undefined) query = query.where(sql.ref(range.column), ">=", range.column === "created_at" ? utc(f.from) : f.from);
  if (range && f.to !== undefined) query = query.where(sql.ref(range.column), "<", range.column === "created_at" ? utc(f.to) : f.to);
  if (f.after !== undefined) query = query.where("id", ">", f.after);
  const sizes = await query.execute();

  const ids = fittingRows(sizes.slice(0, f.limit), (row) => Number(row.bytes)).map((row) => row.id);
  const rows =
    ids.length === 0
      ? []
      : await db.selectFrom(table).select(["id", "raw"]).where("account_id", "=", account).where("id", "in", ids).orderBy("id").execute();
  const more = sizes.length > ids.length;
  return {
    data: rows.map((r) => r.raw as MirrorRecord),
    nextCursor: more ? encodeCursor(expectDefined(ids.at(-1), "a page with more after it has a last id")) : null,
  };
}

// A record in the API's shape → the row of its table. Typed columns are read from the record
// with a check each, and every value PostgreSQL would refuse (NUL or a lone surrogate in any
// string, raw included; 2026-02-30; an integer beyond int32; an id too long for its index) is
// caught here, per record, before any SQL runs; the record itself goes to `raw` unchanged,
// unknown fields included. Money leaves here as a decimal string:
// a JSON number's shortest form (what the API sent, as JavaScript parsed it) or the string given.

/** A row before its write: the store adds its account (upsertRows), so checking a record needs none. */
type Unscoped<T> = Omit<Insertable<T>, "account_id">;
type MirrorRow = Unscoped<OrdersTable> | Unscoped<BookingsTable> | Unscoped<MenuItemsTable> | Unscoped<ReviewsTable>;

export interface PreparedRecord {
  id: string;
  rank: number;
  row: MirrorRow;
  /** Orders only: the line items that replace the stored ones. */
  items?: Unscoped<OrderItemsTable>[];
}

const DECIMAL = /^-?\d+(\.\d+)?$/;

/** A field's check: true, or the reason its present value is refused ("invalid_field": wrong type or form). */
type FieldCheck = (v: unknown) => true | UnstorableReason;

const check = (test: boolean, reason: UnstorableReason = "invalid_field") => (test ? true : reason);
const isString = (v: unknown): v is string => typeof v === "string";
const isNonEmptyText: FieldCheck = (v) => check(isString(v) && v !== "");
const isText: FieldCheck = (v) => check(isString(v));
/** A text column that is indexed: bounded in bytes (a btree entry has a size limit). */
const isKey: FieldCheck = (v) => (!isString(v) || v === "" ? "invalid_field" : check(fitsKey(v), "too_long"));
const isDecimal: FieldCheck = (v) =>
  typeof v === "number"
    ? check(Number.isFinite(v))
    : !isString(v) || !DECIMAL.test(v)
      ? "invalid_field"
      : check(v.length <= MAX_DECIMAL_CHARS, "out_of_range");
const isInteger: FieldCheck = (v) => (Number.isSafeInteger(v) ? check(isInt32(v), "out_of_range") : "invalid_field");
const isTimestampValue: FieldCheck = (v) => (isString(v) ? check(isTimestamp(v), "invalid_timestamp") : "invalid_field");
// Spec part 2: a booking's date is "an ISO 8601 timestamp of the booking day".
const isDateValue: FieldCheck = (v) => (isString(v) ? check(isCalendarDate(v) || isTimestamp(v), "invalid_date") : "invalid_field");
const isTimeValue: FieldCheck = (v) => (isString(v) ? check(isTimeOfDay(v), "invalid_time") : "invalid_field");
const isTextArray: FieldCheck = (v) => check(Array.isArray(v) && v.every((s) => typeof s === "string"));

/**
 * Reads one record's fields for its columns, each by its check, and throws MirrorRecordError
 * naming the field (under `prefix`) and the reason. A class, not closures: one is made per record
 * and per line item, and its methods are made once.
 */
class FieldReader {
  constructor(
    private readonly kind: MirrorKind,
    private readonly record: Record<string, unknown>,
    private readonly id: string | undefined,
    private readonly prefix = "",
  ) {}

  fail(field: string, expected: string, reason: UnstorableReason = "invalid_field"): never {
    throw new MirrorRecordError(this.kind, this.id, this.prefix + field, expected, reason);
  }

  private get(field: string, nullable: boolean, expected: string, ok: FieldCheck): unknown {
    const value = this.record[field];
    if (value === null || value === undefined) return nullable ? null : this.fail(field, expected);
    const verdict = ok(value);
    return verdict === true ? value : this.fail(field, expected + (nullable ? " or null" : ""), verdict);
  }

  text(field: string): string {
    return this.get(field, false, "a non-empty string", isNonEmptyText) as string;
  }
  optText(field: string): string | null {
    return this.get(field, true, "a string", isText) as string | null;
  }
  key(field: string): string {
    return this.get(field, false, `a non-empty string of at most ${MAX_KEY_BYTES} bytes`, isKey) as string;
  }
  decimal(field: string): string {
    return String(this.get(field, false, "a decimal amount (number or decimal string)", isDecimal));
  }
  optDecimal(field: string): string | null {
    const v = this.get(field, true, "a decimal amount (number or decimal string)", isDecimal) as number | string | null;
    return v === null ? null : String(v);
  }
  integer(field: string): number {
    return this.get(field, false, "an integer within ±2^31", isInteger) as number;
  }
  optInteger(field: string): number | null {
    return this.get(field, true, "an integer within ±2^31", isInteger) as number | null;
  }
  timestamp(field: string): string {
    return this.get(field, false, "an ISO-8601 timestamp", isTimestampValue) as string;
  }
  optTimestamp(field: string): string | null {
    return this.get(field, true, "an ISO-8601 timestamp", isTimestampValue) as string | null;
  }
  /** The day as written (its first ten characters), never shifted by a time zone. */
  date(field: string): string {
    return (this.get(field, false, "a date (YYYY-MM-DD, or an ISO 8601 timestamp of the day)", isDateValue) as string).slice(0, 10);
  }
  time(field: string): string {
    return this.get(field, false, "a time HH:MM", isTimeValue) as string;
  }
  optTextArray(field: string): string[] | null {
    return this.get(field, true, "an array of strings", isTextArray) as string[] | null;
  }
}

function orderItems(record: MirrorRecord, orderId: string): Unscoped<OrderItemsTable>[] {
  const items = record.items;
  if (!Array.isArray(items)) throw new MirrorRecordError("orders", orderId, "items", "an array of line items");
  const seen = new Set<string>();
  return items.map((item: unknown, position) => {
    if (typeof item !== "object" || item === null) throw new MirrorRecordError("orders", orderId, `items[${position}]`, "an object");
    const f = new FieldReader("orders", item as Record<string, unknown>, orderId, `items[${position}].`);
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
 * neither), and the id rule (values.ts) that the edge applies to event ids. Checked first, so what
 * a refused record is filed under is always its id's own problem.
 */
function checkIdentity(f: FieldReader, record: Partial<MirrorRecord>): string {
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
    checkIdentity(new FieldReader(kind, identity, identity.id), identity);
    return undefined;
  } catch (err) {
    if (err instanceof MirrorRecordError) return err;
    throw err;
  }
}

/** Checks one record and builds its row; throws MirrorRecordError naming the field and the reason. */
function prepareRecord(kind: MirrorKind, record: MirrorRecord, readAt: Date): PreparedRecord {
  // Typed callers cannot pass a non-object; JavaScript callers and bad casts can.
  const value: unknown = record;
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new MirrorRecordError(kind, undefined, "(record)", "an object");
  const f = new FieldReader(kind, record, typeof record.id === "string" && record.id !== "" ? record.id : undefined);
  const id = checkIdentity(f, record);
  // Any string anywhere (raw is jsonb, which refuses what text refuses), so typed columns need not check again.
  const unstorable = findUnstorableString(record);
  if (unstorable) f.fail(unstorable.path, "free of NUL characters and lone surrogates", unstorable.reason);
  const rank = rankOf(kind, record);
  const common = { id, restaurant_id: f.key("restaurantId"), raw: JSON.stringify(record), rank, read_at: readAt };
  switch (kind) {
    case "orders": {
      const row: Unscoped<OrdersTable> = {
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
      const d = new FieldReader(kind, diner as Record<string, unknown>, id, "diner.");
      const row: Unscoped<BookingsTable> = {
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
      const row: Unscoped<MenuItemsTable> = {
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

/**
 * How far along its state machine a record is (docs/upstream.md): every allowed order
 * transition increases the rank, and a cancelled booking never comes back. The mirror refuses a
 * write with a lower rank than it holds.
 */
function rankOf(kind: MirrorKind, record: MirrorRecord): number {
  if (kind === "orders") return orderStatusRank(record.status) ?? 0;
  if (kind === "bookings") return bookingStatusRank(record.status);
  return 0;
}

// A write's records before any SQL: checked, set aside or kept, one copy per id, and cut into the
// transactions that write them.

/**
 * Ids one transaction of a write locks and writes at most. Each id is an advisory lock held to the
 * commit, and PostgreSQL's shared lock table holds about max_locks_per_transaction (64) ×
 * max_connections (100) locks by default: a page of 10,000 records in one transaction exhausted
 * it. 100 ids (a page of the API's largest) keep a write's share small at any page size.
 */
export const IDS_PER_TRANSACTION = 100;

/**
 * Each record checked on its own: the ones the mirror can hold become rows, the others are set
 * aside with their reason (one refused record never fails the batch). A refused copy of an id
 * that also came clean in the same batch is dropped: the clean copy is written.
 */
function prepareAll(kind: MirrorKind, records: readonly MirrorRecord[], readAt: Date, upstream: readonly RefusedUpstreamRecord[] = []) {
  const prepared: PreparedRecord[] = [];
  const refused: { rejected: RejectedRecord; record: unknown }[] = upstream.map(({ record, field, message }) => {
    const id = (record as { id?: unknown } | null)?.id;
    const known = typeof id === "string" && id !== "" ? id : undefined;
    const error = new MirrorRecordError(kind, known, field, `as the API spec shows it (${message})`);
    return { rejected: { kind, id: known, reason: error.reason, field, message: error.message }, record };
  });
  for (const record of records) {
    try {
      prepared.push(prepareRecord(kind, record, readAt));
    } catch (err) {
      if (!(err instanceof MirrorRecordError)) throw err;
      refused.push({ rejected: { kind, id: err.id, reason: err.reason, field: err.field, message: err.message }, record });
    }
  }
  const clean = new Set(prepared.map((p) => p.id));
  const rejected = refused.filter((r) => r.rejected.id === undefined || !clean.has(r.rejected.id));
  // One row per id in the table (the last copy read); records without an id are reported only.
  const rows = new Map<string, Rejection>();
  for (const { rejected: r, record } of rejected) if (r.id !== undefined) rows.set(r.id, toRejection({ ...r, id: r.id }, record));
  const ofRecords = rejected.filter((r) => !upstream.some((u) => u.record === r.record)).length;
  return { prepared, rejected: rejected.map((r) => r.rejected), rejections: [...rows.values()], ofRecords };
}

/**
 * One copy per id from a batch: the furthest along wins, and on equal rank the first (they share a
 * read instant, and the tie rule keeps what was there first). The rest count as skipped.
 */
function dedupe(prepared: PreparedRecord[]): PreparedRecord[] {
  const byId = new Map<string, PreparedRecord>();
  for (const p of prepared) {
    const held = byId.get(p.id);
    if (!held || p.rank > held.rank) byId.set(p.id, p);
  }
  return [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** One transaction's share of a write: at most `size` ids, records first, then rejections. */
export interface WriteChunk {
  prepared: PreparedRecord[];
  rejections: Rejection[];
}

/**
 * Cuts a write into transactions of at most `size` ids each (records and rejections together),
 * in order. Every id is in exactly one, so each id's write, its lock and its change event stay
 * in one transaction.
 */
export function chunkWrite(
  prepared: readonly PreparedRecord[],
  rejections: readonly Rejection[],
  size = IDS_PER_TRANSACTION,
): WriteChunk[] {
  const chunks: WriteChunk[] = [];
  // Ids are counted records first, then rejections: the i-th id is a rejection's at i less the records.
  const ofRejections = (i: number) => Math.max(0, i - prepared.length);
  for (let i = 0; i < prepared.length + rejections.length; i += size)
    chunks.push({ prepared: prepared.slice(i, i + size), rejections: rejections.slice(ofRejections(i), ofRejections(i + size)) });
  return chunks;
}

// Kysely types one table at a time; the mirror's four tables share the columns used here
// (id, restaurant_id, raw, rank, read_at, synced_at), so queries over "any mirror table" are
// written against `orders` and run against the kind's table.
type AnyMirrorDb = Kysely<Pick<DatabaseSchema, "orders" | "order_items">>;

/**
 * Transaction-scoped advisory locks on every id a transaction of a write touches (at most
 * IDS_PER_TRANSACTION), taken in one statement in one global order (by lock key), and none taken
 * after: a transaction waits only for a lock that sorts after every lock it holds, so two writes
 * over overlapping ids, however large and in whatever order, queue instead of deadlocking.
 */
async function lockIds(tx: Transaction<DatabaseSchema>, account: string, kind: MirrorKind, ids: readonly string[]): Promise<void> {
  // The account is part of the key: two companies' equal ids are two records, and never wait on each other.
  await sql`select pg_advisory_xact_lock(k) from (
    select distinct hashtextextended(${`mirror:${account}:${kind}:`} || id, 0) as k from unnest(${ids}::text[]) as id order by k
  ) as locks`.execute(tx);
}

/**
 * The stale-write guard, in the upsert itself: the incoming copy replaces the stored one iff
 * (incoming.rank, incoming.read_at) > (stored.rank, stored.read_at), compared lexicographically —
 * further along the state machine wins whatever the read time; at the same rank the later read by
 * the shared clock wins; on an exact tie the stored row stays (so the outcome does not depend on
 * which of two equal writers commits first). A written copy whose content equals the stored one
 * still advances read_at (and synced_at): otherwise an older read, arriving later, could pass the
 * guard against the stale read_at and overwrite data confirmed since. Such a write is not a change.
 */
async function upsertRows(
  tx: Transaction<DatabaseSchema>,
  account: string,
  kind: MirrorKind,
  chunk: PreparedRecord[],
): Promise<{ written: number; changes: MirrorChange[] }> {
  const table = tableOf(kind);
  const ids = chunk.map((p) => p.id);
  const db = tx as unknown as AnyMirrorDb;
  // The caller holds the advisory locks of every id (lockIds): writers of the same ids queued
  // there, so this statement's snapshot is taken after the previous writer committed, and the
  // pre-image below is the row this write actually replaces — also when two writers both see a
  // record for the first time.
  const columns = Object.keys(expectDefined(chunk[0], "upsertRows needs a non-empty chunk").row).filter((c) => c !== "id");
  const set = { ...fromExcluded(columns), synced_at: sql`clock_timestamp()` };
  const rows = await db
    // The pre-image: a plain read, as all parts of the statement share one snapshot (FOR UPDATE
    // here would skip the very rows the insert below updates; the advisory lock already holds them).
    .with("old", (q) => q.selectFrom(table).select(["id", "raw"]).where("account_id", "=", account).where("id", "in", ids))
    .with("up", (q) =>
      q
        .insertInto(table)
        .values(chunk.map((p) => ({ ...p.row, account_id: account })) as never)
        .onConflict((oc) =>
          oc
            .columns(["account_id", "id"])
            .doUpdateSet(set as never)
            .where(sql<boolean>`(excluded.rank, excluded.read_at) > (${sql.table(table)}.rank, ${sql.table(table)}.read_at)`),
        )
        .returning(["id", "raw"]),
    )
    .selectFrom("up")
    .leftJoin("old", "old.id", "up.id")
    .select([
      "up.id",
      "up.raw as after",
      sql<boolean>`old.raw is distinct from up.raw`.as("content_changed"),
      "old.raw as before",
      // A record new to the mirror changed every field: listed here (fieldsOf), not diffed in the statement.
      sql<string[] | null>`case when old.raw is null then null else array(select key from jsonb_each(up.raw) as n(key, value)
        full join jsonb_each(old.raw) as o(key, value) using (key) where n.value is distinct from o.value order by key collate "C") end`.as(
        "changed",
      ),
    ])
    .orderBy("up.id")
    .execute();

  // Line items are part of the content: they change only when it does.
  const changes = rows
    .filter((r) => r.content_changed)
    .map((r): MirrorChange => ({
      kind,
      id: r.id,
      before: (r.before as MirrorRecord | null) ?? null,
      after: r.after as MirrorRecord,
      changed: r.changed ?? fieldsOf(r.after as MirrorRecord),
    }));
  if (kind === "orders" && changes.length > 0) {
    const changed = new Set(changes.map((c) => c.id));
    // Only an order held before has items to replace: a first import deletes nothing.
    const held = changes.filter((c) => c.before !== null).map((c) => c.id);
    if (held.length > 0) await db.deleteFrom("order_items").where("account_id", "=", account).where("order_id", "in", held).execute();
    const items = chunk.filter((p) => changed.has(p.id)).flatMap((p) => (p.items ?? []).map((item) => ({ ...item, account_id: account })));
    if (items.length > 0) await db.insertInto("order_items").values(items).execute();
  }
  return { written: rows.length, changes };
}

/**
 * A record's top-level fields in the order the statement's diff lists them (`collate "C"`: by the
 * bytes of their UTF-8, which is code point order). JavaScript's own sort compares UTF-16 units,
 * which agrees unless a name holds a surrogate pair, so only such names pay for the byte compare.
 * For a first write the diff would name them all, and computing it took 40 % of an import's upsert.
 */
function fieldsOf(record: MirrorRecord): string[] {
  const fields = Object.keys(record);
  return fields.some((f) => /[\uD800-\uDFFF]/.test(f))
    ? fields.sort((a, b) => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8")))
    : fields.sort();
}

/**
 * One transaction of a write: the locks of its ids, their rows (and line items), the rejections,
 * and the change events of what it changed (`onChanges`), committed together.
 */
async function writeChunk(
  tx: Transaction<DatabaseSchema>,
  account: string,
  kind: MirrorKind,
  chunk: WriteChunk,
  onChanges: OnMirrorChanges | undefined,
): Promise<{ written: number; changes: MirrorChange[] }> {
  const ids = chunk.prepared.map((p) => p.id);
  await lockIds(tx, account, kind, [...ids, ...chunk.rejections.map((r) => r.key)]);
  const outcome = chunk.prepared.length > 0 ? await upsertRows(tx, account, kind, chunk.prepared) : { written: 0, changes: [] };
  await recordRejections(tx, account, kind, chunk.rejections);
  // A record that reads clean again is no longer rejected (whether or not this copy won the guard).
  await clearSetAside(tx, "rejected_records", account, kind, ids);
  // An id once reported as never listed is listed after all.
  await clearSetAside(tx, "unlisted_records", account, kind, ids);
  if (outcome.changes.length > 0 && onChanges) await onChanges(tx, outcome.changes);
  return outcome;
}

/**
 * MirrorStore.countOrdersNewer's one statement for a whole job's ids. Bounded: each count's index
 * walk stops at its `max` rows however deep the record sits. The ORDER BY makes that walk the
 * created_at index's: the planner cannot tell how many rows a per-row `since` leaves, guesses a
 * third, and under a LIMIT alone prefers to seq-scan the company's orders for every count (9 s for
 * one job's 1,000 counts at 20,000 orders, all before the refresh's first call). Exported for the
 * test that reads its plan.
 */
export const ordersNewerStatement = (account: string, queries: Parameters<MirrorStore["countOrdersNewer"]>[0]) => sql<{
  i: number;
  n: string | number;
}>`
  SELECT q.i, (
    SELECT count(*) FROM (
      SELECT 1 FROM orders o
      WHERE o.account_id = ${account} AND o.created_at > q.since::timestamptz
        AND (q.restaurant_id IS NULL OR o.restaurant_id = q.restaurant_id)
        AND (q.status IS NULL OR o.status = q.status)
      ORDER BY o.created_at
      LIMIT q.max
    ) newer
  ) AS n
  FROM unnest(
    ${queries.map((_, i) => i)}::int[],
    ${queries.map((q) => q.since.toISOString())}::text[],
    ${queries.map((q) => q.restaurantId ?? null)}::text[],
    ${queries.map((q) => q.status ?? null)}::text[],
    ${queries.map((q) => q.max)}::int[]
  ) AS q(i, since, restaurant_id, status, max)`;

/** How the shared clock is sampled and carried forward (`createSharedClock`). */
export interface SharedClockOptions {
  /** Reads the database's clock (one query). */
  read: () => Promise<Date>;
  /** This process's monotonic clock, ms. @defaultValue performance.now */
  monotonic?: () => number;
  /** A sample older than this is read again in the background. @defaultValue 1000 */
  freshMs?: number;
  /** A sample older than this is read again before answering. @defaultValue 60_000 */
  maxAgeMs?: number;
}

/**
 * How far another host's clock (the database's) may run ahead of this process's monotonic clock
 * while NTP slews it: the kernel slews at most 500 ppm. Taken off a carried-forward sample so it
 * stays a lower bound.
 */
const MAX_CLOCK_SLEW = 0.0005;

/**
 * The database's clock without a query per read. A sample of `clock_timestamp()` was taken before
 * its answer arrived, so the sample plus the monotonic time elapsed since that answer (less the
 * most NTP may slew the database's clock meanwhile) is a lower bound of the database's time now:
 * a read never looks newer than it is, which is what the mirror's compare needs (a page read
 * under load used to wait behind the page writes for a pool connection just to read the time,
 * twice a page). Never decreasing within a process; a sample older than `freshMs` is read again in
 * the background, one older than `maxAgeMs` (or none yet) before answering.
 */
export function createSharedClock(options: SharedClockOptions): () => Promise<Date> {
  const monotonic = options.monotonic ?? (() => performance.now());
  const freshMs = options.freshMs ?? 1000;
  const maxAgeMs = options.maxAgeMs ?? 60_000;
  let sample: { db: number; at: number } | undefined;
  let reading: Promise<void> | undefined;
  let last = Number.NEGATIVE_INFINITY;
  const readAgain = () =>
    (reading ??= options
      .read()
      .then((db) => void (sample = { db: db.getTime(), at: monotonic() }))
      .finally(() => (reading = undefined)));
  return async () => {
    if (sample === undefined || monotonic() - sample.at > maxAgeMs) await readAgain();
    else if (monotonic() - sample.at > freshMs) readAgain().catch(() => undefined);
    const { db, at } = expectDefined(sample, "the database's clock was read");
    const elapsed = monotonic() - at;
    last = Math.max(last, Math.floor(db + elapsed - elapsed * MAX_CLOCK_SLEW));
    return new Date(last);
  };
}

/** The mirror in PostgreSQL (server or embedded): see MirrorStore for the guarantees. */
export interface PostgresMirrorOptions {
  /**
   * The account (company) this store is scoped to: every read filters by it, every write is filed under it.
   * @defaultValue DEFAULT_ACCOUNT
   */
  account?: string;
  /**
   * Told of the records each upsert set aside, after it committed (a log line and a metric:
   * set-aside-records.ts). Must not throw.
   */
  onRejected?: (rejected: readonly RejectedRecord[]) => void;
  /** The process's shared clock (one for every account's store). @defaultValue one of this store's own */
  clock?: () => Promise<Date>;
}

/** The database's own clock: one query. */
export const databaseClock = (database: Kysely<DatabaseSchema>): Promise<Date> =>
  sql<{ now: Date }>`select clock_timestamp() as now`
    .execute(database)
    .then((r) => expectDefined(r.rows[0], "select clock_timestamp() returned no row").now);

export function createPostgresMirror(database: Kysely<DatabaseSchema>, mirrorOptions: PostgresMirrorOptions = {}): MirrorStore {
  const db = database as unknown as AnyMirrorDb;
  const account = mirrorOptions.account ?? DEFAULT_ACCOUNT;
  const clock = mirrorOptions.clock ?? createSharedClock({ read: () => databaseClock(database) });
  /** The kind's table, this account's rows only. */
  const rowsOf = (kind: MirrorKind) => db.selectFrom(tableOf(kind)).where("account_id", "=", account);
  /** Bookings per day (YYYY-MM-DD) from `from` to `to`, inclusive; the caller groups by date (and restaurant). */
  const bookingsPerDay = (from: string, to: string) =>
    database
      .selectFrom("bookings")
      .select([sql<string>`to_char(date, 'YYYY-MM-DD')`.as("day"), (eb) => eb.fn.countAll<string | number>().as("n")])
      .where("account_id", "=", account)
      .where("date", ">=", from)
      .where("date", "<=", to);

  return {
    account,
    clock,

    async upsert(kind, records, readAt, options = {}): Promise<UpsertResult> {
      if (!isValidDate(readAt))
        throw new MirrorRecordError(kind, undefined, "readAt", "a valid Date from the shared clock (MirrorStore.clock)");
      if (records.length === 0 && !options.refused?.length) return { written: 0, skipped: 0, changes: [], rejected: [] };
      const all = prepareAll(kind, records, readAt, options.refused);
      const result: UpsertResult = { written: 0, skipped: 0, changes: [], rejected: all.rejected };
      // One transaction per chunk: each takes its locks in one statement and holds them only to
      // its own commit, so no write ever waits for a lock while holding others (no deadlock).
      for (const chunk of chunkWrite(dedupe(all.prepared), all.rejections)) {
        const outcome = await database.transaction().execute((tx) => writeChunk(tx, account, kind, chunk, options.onChanges));
        result.written += outcome.written;
        result.changes.push(...outcome.changes);
      }
      result.skipped = records.length - result.written - all.ofRecords;
      if (result.rejected.length > 0) mirrorOptions.onRejected?.(result.rejected);
      return result;
    },

    async get(kind, id) {
      const row = await rowsOf(kind).select("raw").where("id", "=", id).executeTakeFirst();
      return row?.raw as MirrorRecord | undefined;
    },

    list: (kind, filter) => listMirrorPage(db, account, kind, filter),

    async all(kind) {
      const rows = await rowsOf(kind).select("raw").orderBy("id").execute();
      return rows.map((r) => r.raw as MirrorRecord);
    },

    rejections: (kind) => listRejections(database, account, kind),
    async countOrdersNewer(queries) {
      if (queries.length === 0) return [];
      const { rows } = await ordersNewerStatement(account, queries).execute(db);
      const counts = queries.map(() => 0);
      for (const row of rows) counts[row.i] = Number(row.n);
      return counts;
    },
    async countBookingsByDay(from, to) {
      const rows = await bookingsPerDay(from, to).groupBy("date").execute();
      return new Map(rows.map((r) => [r.day, Number(r.n)]));
    },
    async countBookingsByRestaurantDay(from, to, restaurantIds) {
      const out = new Map<string, Map<string, number>>();
      if (restaurantIds.length === 0) return out;
      const rows = await bookingsPerDay(from, to)
        .select("restaurant_id")
        .where("restaurant_id", "in", [...restaurantIds])
        .groupBy(["restaurant_id", "date"])
        .execute();
      for (const r of rows) out.set(r.restaurant_id, (out.get(r.restaurant_id) ?? new Map<string, number>()).set(r.day, Number(r.n)));
      return out;
    },
    recordUnlisted: (row) => recordUnlisted(database, account, row),
    unlisted: (kind) => listUnlisted(database, account, kind),

    async lastWriteAt(kind) {
      const row = await rowsOf(kind)
        .select((eb) => eb.fn.max("synced_at").as("at"))
        .executeTakeFirst();
      return row?.at ? new Date(row.at).getTime() : undefined;
    },
  };
}

/** When a mirrored record was last read from the API and last written here (both by the database's clock). */
export interface RecordBookkeeping {
  readAt: Date;
  syncedAt: Date;
}

/**
 * The read and sync times of some records of a kind (a page the console shows), by id: what
 * `MirrorStore.list` leaves out, since API clients want the records as the upstream shapes them.
 */
export async function readBookkeeping(
  db: Kysely<DatabaseSchema>,
  kind: MirrorKind,
  ids: readonly string[],
  timeoutMs: number,
  account = DEFAULT_ACCOUNT,
): Promise<Map<string, RecordBookkeeping>> {
  if (ids.length === 0) return new Map();
  const rows = await withOperatorTimeout(timeoutMs, () =>
    db
      .selectFrom(tableOf(kind))
      .select(["id", "read_at", "synced_at"])
      .where("account_id", "=", account)
      .where("id", "in", [...ids])
      .execute(),
  );
  return new Map(rows.map((r) => [r.id, { readAt: new Date(r.read_at), syncedAt: new Date(r.synced_at) }]));
}
