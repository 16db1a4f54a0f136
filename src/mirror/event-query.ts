import type { EventStatus } from "./database-schema.js";
import { EventLogError } from "./event-log-error.js";
import { FINGERPRINT_LENGTH } from "./error-fingerprint.js";
import { idProblem } from "./id-text.js";
import { isStorableDate, parseIsoInstant } from "./iso-instant.js";

export const EVENT_STATUSES = ["received", "handled", "failed"] as const satisfies readonly EventStatus[];
const HANDLER_STATUSES = ["ok", "failed"] as const;
export const DEFAULT_EVENT_LIMIT = 100;
export const MAX_EVENT_LIMIT = 1000;

export interface EventQuery {
  /** Received at or after. */
  since?: Date;
  /** Received before. */
  until?: Date;
  /** An event type (`order.created`), a family (`order.*`) or everything (`*`). */
  type?: string;
  status?: EventStatus;
  /** Only events for which this handler recorded an outcome… */
  handler?: string;
  /** …and that outcome was this one (needs `handler`). */
  handlerStatus?: (typeof HANDLER_STATUSES)[number];
  /** …and it failed with an error of this fingerprint (error-fingerprint.ts; needs `handler`). */
  fingerprint?: string;
  /** 1..1000, default 100. */
  limit?: number;
  /** `nextCursor` of the previous page. */
  cursor?: string;
  /** Newest first (the console's order); default oldest first. A cursor keeps the order it was made in. */
  newestFirst?: boolean;
}

export interface ValidEventQuery extends Omit<EventQuery, "type" | "cursor" | "limit"> {
  /** Exact type, or a LIKE prefix pattern (already escaped) when `typeIsPattern`. */
  type?: string;
  typeIsPattern: boolean;
  limit: number;
  after?: { receivedAt: Date; id: string };
}

const TYPE = /^(\*|[a-z][a-z0-9_]*(\.[a-z0-9_]+)*(\.\*)?)$/;
const HANDLER_KEY = /^[\w.:*-]{1,100}$/;

const invalid = (field: string, message: string) => new EventLogError("invalid_filter", field, message);

export const encodeEventCursor = (receivedAt: Date, id: string) =>
  Buffer.from(`${receivedAt.toISOString()}|${id}`, "utf8").toString("base64url");

// What encodeEventCursor writes: a millisecond UTC timestamp (years 0001–9999), a bar, an event id.
const CURSOR_TEXT = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)\|([^]+)$/;

/** A cursor must decode to what this log could have written: a valid time and a storable id. */
export function decodeEventCursor(cursor: string): { receivedAt: Date; id: string } {
  const refuse = (why: string) => invalid("cursor", `cursor is not one this log returned (${why}); pass nextCursor unchanged`);
  if (!/^[A-Za-z0-9_-]{1,2000}$/.test(cursor)) throw refuse("not base64url text");
  const parts = CURSOR_TEXT.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  if (!parts?.[1] || parts[2] === undefined) throw refuse("not a time and an id");
  const time = parseIsoInstant(parts[1]);
  if (!time.ok) throw refuse(`its time ${time.problem}`);
  const problem = idProblem(parts[2]);
  if (problem) throw refuse(`its id ${problem}`);
  return { receivedAt: time.instant, id: parts[2] };
}

/** A since/until parameter, strictly: see parseIsoInstant. */
function parseBound(field: "since" | "until", text: string): Date {
  const parsed = parseIsoInstant(text);
  if (!parsed.ok) throw invalid(field, `${field} ${parsed.problem}`);
  return parsed.instant;
}

/** Checks an event query; throws EventLogError (invalid_filter) naming the first bad field. */
export function validateEventQuery(query: EventQuery = {}): ValidEventQuery {
  const valid: ValidEventQuery = { typeIsPattern: false, limit: DEFAULT_EVENT_LIMIT };
  for (const bound of ["since", "until"] as const) {
    if (query[bound] === undefined) continue;
    if (!isStorableDate(query[bound])) throw invalid(bound, `${bound} must be a valid date in the years 0001–9999`);
    valid[bound] = query[bound];
  }
  if (query.type !== undefined) {
    if (typeof query.type !== "string" || !TYPE.test(query.type))
      throw invalid("type", "type must be an event type (order.created), a family (order.*) or *");
    if (query.type.endsWith("*")) {
      // Only letters, digits, _ and . reach here; _ is a LIKE wildcard, so escape it.
      if (query.type !== "*") valid.type = `${query.type.slice(0, -1).replaceAll("_", "\\_")}%`;
      valid.typeIsPattern = query.type !== "*";
    } else valid.type = query.type;
  }
  if (query.status !== undefined) {
    if (!(EVENT_STATUSES as readonly string[]).includes(query.status))
      throw invalid("status", `status must be one of ${EVENT_STATUSES.join(", ")}, retrying`);
    valid.status = query.status;
  }
  if (query.handler !== undefined) {
    if (typeof query.handler !== "string" || !HANDLER_KEY.test(query.handler))
      throw invalid("handler", "handler must be a handler key (letters, digits, . _ : * -)");
    valid.handler = query.handler;
  }
  if (query.handlerStatus !== undefined) {
    if (valid.handler === undefined) throw invalid("handlerStatus", "handlerStatus needs handler");
    if (!(HANDLER_STATUSES as readonly string[]).includes(query.handlerStatus))
      throw invalid("handlerStatus", "handlerStatus must be ok or failed");
    valid.handlerStatus = query.handlerStatus;
  }
  if (query.fingerprint !== undefined) {
    if (valid.handler === undefined) throw invalid("fingerprint", "fingerprint needs handler");
    if (valid.handlerStatus === "ok") throw invalid("fingerprint", "fingerprint selects failed outcomes; handlerStatus ok contradicts it");
    const problem = typeof query.fingerprint === "string" ? idProblem(query.fingerprint, FINGERPRINT_LENGTH) : "must be text";
    if (problem) throw invalid("fingerprint", `fingerprint ${problem}`);
    valid.fingerprint = query.fingerprint;
  }
  if (query.limit !== undefined) {
    if (!Number.isInteger(query.limit) || query.limit < 1 || query.limit > MAX_EVENT_LIMIT)
      throw invalid("limit", `limit must be an integer from 1 to ${MAX_EVENT_LIMIT}`);
    valid.limit = query.limit;
  }
  if (query.cursor !== undefined) valid.after = decodeEventCursor(query.cursor);
  if (query.newestFirst === true) valid.newestFirst = true;
  return valid;
}

/**
 * An event query from text parameters (URL query, CLI flags): dates as ISO 8601, `limit` as a
 * number. Unknown parameters are refused, so a typo is a 400 rather than an unfiltered log.
 */
export function eventQueryFromParams(params: Record<string, string | undefined>): EventQuery {
  const known = ["since", "until", "type", "status", "handler", "handlerStatus", "fingerprint", "limit", "cursor", "order"];
  for (const name of Object.keys(params))
    if (!known.includes(name)) throw invalid(name, `unknown filter ${name}; filters are ${known.join(", ")}`);
  const query: EventQuery = {};
  for (const bound of ["since", "until"] as const) {
    const text = params[bound];
    if (text !== undefined) query[bound] = parseBound(bound, text);
  }
  if (params.type !== undefined) query.type = params.type;
  // "retrying": the last attempt failed and the job will try again, which the log records as "received".
  if (params.status !== undefined) query.status = (params.status === "retrying" ? "received" : params.status) as EventStatus;
  if (params.handler !== undefined) query.handler = params.handler;
  if (params.handlerStatus !== undefined) query.handlerStatus = params.handlerStatus as EventQuery["handlerStatus"];
  if (params.fingerprint !== undefined) query.fingerprint = params.fingerprint;
  if (params.cursor !== undefined) query.cursor = params.cursor;
  if (params.order !== undefined) {
    if (params.order !== "newest" && params.order !== "oldest") throw invalid("order", "order must be newest or oldest");
    query.newestFirst = params.order === "newest";
  }
  if (params.limit !== undefined) {
    if (!/^\d{1,4}$/.test(params.limit)) throw invalid("limit", `limit must be an integer from 1 to ${MAX_EVENT_LIMIT}`);
    query.limit = Number(params.limit);
  }
  return query;
}
