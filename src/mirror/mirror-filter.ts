import { ORDER_STATUSES } from "../upstream/models.js";
import { idProblem, MAX_RECORD_ID_LENGTH } from "./id-text.js";
import { parseIsoInstant } from "./iso-instant.js";
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

const BOOKING_STATUS = /^[A-Z][A-Z_]{0,39}$/;
const CURSOR_PREFIX = "id:";

export const encodeCursor = (lastId: string) => Buffer.from(CURSOR_PREFIX + lastId, "utf8").toString("base64url");

function decodeCursor(cursor: string): string {
  const text = /^[A-Za-z0-9_-]{1,8000}$/.test(cursor) ? Buffer.from(cursor, "base64url").toString("utf8") : "";
  const id = text.startsWith(CURSOR_PREFIX) ? text.slice(CURSOR_PREFIX.length) : "";
  const problem = idProblem(id, MAX_RECORD_ID_LENGTH);
  if (problem) throw new MirrorFilterError("cursor", `cursor is not one this API returned (its id ${problem}); pass nextCursor unchanged`);
  return id;
}

/** A record id from a path (GET /mirror/{kind}/{id}): one the database could hold, else a 400 naming why. */
export function validateRecordId(id: string): string {
  const problem = idProblem(id, MAX_RECORD_ID_LENGTH);
  if (problem) throw new MirrorFilterError("id", `id ${problem}`);
  return id;
}

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
export const RANGE_FIELD: Partial<Record<MirrorKind, { column: "created_at" | "date"; dateOnly: boolean; describe: string }>> = {
  orders: {
    column: "created_at",
    dateOnly: false,
    describe: "an ISO-8601 date or timestamp with zone (2026-11-20 or 2026-11-20T08:00:00Z)",
  },
  bookings: { column: "date", dateOnly: true, describe: "a date YYYY-MM-DD" },
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
    const problem = typeof filter.restaurantId === "string" ? idProblem(filter.restaurantId) : "must be a string";
    if (problem) throw new MirrorFilterError("restaurantId", `restaurantId ${problem}`);
    valid.restaurantId = filter.restaurantId;
  }
  if (filter.status !== undefined) valid.status = checkStatus(kind, filter.status);
  for (const bound of ["from", "to"] as const) {
    if (filter[bound] !== undefined) valid[bound] = checkBound(kind, bound, filter[bound]);
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
