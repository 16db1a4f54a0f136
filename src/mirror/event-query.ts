import type { EventStatus } from "./database-schema.js";
import { EventLogError } from "./event-log-error.js";

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
  /** 1..1000, default 100. */
  limit?: number;
  /** `nextCursor` of the previous page. */
  cursor?: string;
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
const validDate = (d: unknown): d is Date => d instanceof Date && !Number.isNaN(d.getTime());

export const encodeEventCursor = (receivedAt: Date, id: string) =>
  Buffer.from(`${receivedAt.toISOString()}|${id}`, "utf8").toString("base64url");

function decodeEventCursor(cursor: string): { receivedAt: Date; id: string } {
  const text = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, "base64url").toString("utf8") : "";
  const sep = text.indexOf("|");
  const receivedAt = new Date(text.slice(0, sep));
  if (sep < 0 || !validDate(receivedAt) || sep === text.length - 1)
    throw invalid("cursor", "cursor is not one this log returned (pass nextCursor unchanged)");
  return { receivedAt, id: text.slice(sep + 1) };
}

/** Checks an event query; throws EventLogError (invalid_filter) naming the first bad field. */
export function validateEventQuery(query: EventQuery = {}): ValidEventQuery {
  const valid: ValidEventQuery = { typeIsPattern: false, limit: DEFAULT_EVENT_LIMIT };
  for (const bound of ["since", "until"] as const) {
    if (query[bound] === undefined) continue;
    if (!validDate(query[bound])) throw invalid(bound, `${bound} must be a valid date`);
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
      throw invalid("status", `status must be one of ${EVENT_STATUSES.join(", ")}`);
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
  if (query.limit !== undefined) {
    if (!Number.isInteger(query.limit) || query.limit < 1 || query.limit > MAX_EVENT_LIMIT)
      throw invalid("limit", `limit must be an integer from 1 to ${MAX_EVENT_LIMIT}`);
    valid.limit = query.limit;
  }
  if (query.cursor !== undefined) valid.after = decodeEventCursor(query.cursor);
  return valid;
}

/**
 * An event query from text parameters (URL query, CLI flags): dates as ISO 8601, `limit` as a
 * number. Unknown parameters are refused, so a typo is a 400 rather than an unfiltered log.
 */
export function eventQueryFromParams(params: Record<string, string | undefined>): EventQuery {
  const known = ["since", "until", "type", "status", "handler", "handlerStatus", "limit", "cursor"];
  for (const name of Object.keys(params))
    if (!known.includes(name)) throw invalid(name, `unknown filter ${name}; filters are ${known.join(", ")}`);
  const query: EventQuery = {};
  for (const bound of ["since", "until"] as const) {
    const text = params[bound];
    if (text === undefined) continue;
    const date = new Date(text);
    if (!/^\d{4}-\d{2}-\d{2}/.test(text) || !validDate(date))
      throw invalid(bound, `${bound} must be an ISO 8601 date or timestamp (2026-11-23 or 2026-11-23T10:00:00Z)`);
    query[bound] = date;
  }
  if (params.type !== undefined) query.type = params.type;
  if (params.status !== undefined) query.status = params.status as EventStatus;
  if (params.handler !== undefined) query.handler = params.handler;
  if (params.handlerStatus !== undefined) query.handlerStatus = params.handlerStatus as EventQuery["handlerStatus"];
  if (params.cursor !== undefined) query.cursor = params.cursor;
  if (params.limit !== undefined) {
    if (!/^\d{1,4}$/.test(params.limit)) throw invalid("limit", `limit must be an integer from 1 to ${MAX_EVENT_LIMIT}`);
    query.limit = Number(params.limit);
  }
  return query;
}
