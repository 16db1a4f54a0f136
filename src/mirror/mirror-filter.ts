import { ORDER_STATUSES } from "../upstream/models.js";
import { MirrorFilterError } from "./mirror-filter-error.js";
import type { MirrorKind, MirrorListFilter } from "./store.js";

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 100;

/** A filter that passed every check; `after` is the id the cursor points past. */
export interface ValidFilter {
  restaurantId?: string;
  status?: string;
  from?: string;
  to?: string;
  limit: number;
  after?: string;
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2}))?$/;
const BOOKING_STATUS = /^[A-Z][A-Z_]{0,39}$/;
const CURSOR_PREFIX = "id:";

export const encodeCursor = (lastId: string) => Buffer.from(CURSOR_PREFIX + lastId, "utf8").toString("base64url");

function decodeCursor(cursor: string): string {
  const text = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, "base64url").toString("utf8") : "";
  if (!text.startsWith(CURSOR_PREFIX) || text.length === CURSOR_PREFIX.length)
    throw new MirrorFilterError("cursor", "cursor is not one this API returned (pass nextCursor unchanged)");
  return text.slice(CURSOR_PREFIX.length);
}

/** The column `from`/`to` bound, per kind: orders by creation time, bookings by their date, others none. */
export const RANGE_FIELD: Partial<Record<MirrorKind, { column: "created_at" | "date"; format: RegExp; describe: string }>> = {
  orders: {
    column: "created_at",
    format: TIMESTAMP,
    describe: "an ISO-8601 date or timestamp with zone (2026-11-20 or 2026-11-20T08:00:00Z)",
  },
  bookings: { column: "date", format: DATE, describe: "a date YYYY-MM-DD" },
};

function checkStatus(kind: MirrorKind, status: string): string {
  if (kind === "orders" && !(ORDER_STATUSES as readonly string[]).includes(status)) {
    throw new MirrorFilterError("status", `status for orders must be one of ${ORDER_STATUSES.join(", ")}`);
  }
  if (kind === "bookings" && !BOOKING_STATUS.test(status))
    throw new MirrorFilterError("status", "status for bookings must be an upper-case status such as CONFIRMED or CANCELLED");
  if (kind !== "orders" && kind !== "bookings") throw new MirrorFilterError("status", `${kind} have no status to filter by`);
  return status;
}

/** Checks a list filter against its kind; throws MirrorFilterError naming the first bad field. */
export function validateFilter(kind: MirrorKind, filter: MirrorListFilter = {}): ValidFilter {
  const valid: ValidFilter = { limit: DEFAULT_LIMIT };
  if (filter.restaurantId !== undefined) {
    if (typeof filter.restaurantId !== "string" || filter.restaurantId === "" || filter.restaurantId.length > 200)
      throw new MirrorFilterError("restaurantId", "restaurantId must be a non-empty id");
    valid.restaurantId = filter.restaurantId;
  }
  if (filter.status !== undefined) valid.status = checkStatus(kind, filter.status);
  for (const bound of ["from", "to"] as const) {
    const value = filter[bound];
    if (value === undefined) continue;
    const range = RANGE_FIELD[kind];
    if (!range) throw new MirrorFilterError(bound, `${kind} cannot be filtered by date (from/to apply to orders and bookings)`);
    if (typeof value !== "string" || !range.format.test(value) || Number.isNaN(Date.parse(value)))
      throw new MirrorFilterError(bound, `${bound} must be ${range.describe}`);
    valid[bound] = value;
  }
  if (filter.limit !== undefined) {
    if (!Number.isInteger(filter.limit) || filter.limit < 1 || filter.limit > MAX_LIMIT)
      throw new MirrorFilterError("limit", `limit must be an integer from 1 to ${MAX_LIMIT}`);
    valid.limit = filter.limit;
  }
  if (filter.cursor !== undefined) valid.after = decodeCursor(filter.cursor);
  return valid;
}

/**
 * A list filter from URL query parameters (the HTTP layer's input): `limit` from text, the rest
 * as given. Unknown parameters are refused too, so a typo is a 400 rather than an unfiltered list.
 */
export function filterFromQuery(query: Record<string, string | undefined>): MirrorListFilter {
  const known = new Set(["restaurantId", "status", "from", "to", "limit", "cursor"]);
  for (const name of Object.keys(query))
    if (!known.has(name)) throw new MirrorFilterError(name, `unknown filter ${name}; filters are ${[...known].join(", ")}`);
  const { limit, ...rest } = query;
  const filter: MirrorListFilter = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined));
  if (limit !== undefined) {
    if (!/^\d{1,3}$/.test(limit)) throw new MirrorFilterError("limit", `limit must be an integer from 1 to ${MAX_LIMIT}`);
    filter.limit = Number(limit);
  }
  return filter;
}
