import { setImmediate as nextTurn } from "node:timers/promises";
import { sql, type Kysely, type RawBuilder } from "kysely";
import type { DatabaseSchema, EventStatus, HandlerOutcome } from "./database-schema.js";
import { encodeEventCursor, type ValidEventQuery } from "./event-query.js";
import { withOperatorTimeout } from "./operator-query-timeout-error.js";

/** One event in a list: everything but the payload (GET /events/{id} has it), handler errors cut short. */
export interface EventSummary {
  id: string;
  type: string;
  /** First delivery to a worker, by the database's clock (millisecond precision). */
  receivedAt: Date;
  status: EventStatus;
  attempts: number;
  /** Each handler's latest status and attempts, its error cut to SUMMARY_ERROR_LENGTH (the event itself has it whole, with any stack). */
  handlers: Record<string, HandlerOutcome>;
  updatedAt: Date;
}

export interface EventPage {
  data: EventSummary[];
  /**
   * Pass as `cursor` for the next page; null when the log has nothing further. A page can be
   * shorter than `limit` (even empty) and still have a cursor: it stopped at its byte budget or,
   * on the embedded store, at its scan budget.
   */
  nextCursor: string | null;
}

/** How a list is bounded. */
export interface EventListBounds {
  /** JSON bytes of summaries per page, besides `limit`. */
  maxPageBytes: number;
  /** Stop after this long (embedded: between windows; a server cancels the statement itself). */
  timeoutMs: number;
  /**
   * Embedded store: rows of the log per statement. Each statement touches at most this many rows
   * and the event loop and the one connection are handed back between statements, so /healthz,
   * the edge and the worker never wait behind a whole scan. Undefined: one statement (a server,
   * where statement_timeout and a pool of its own bound it).
   */
  windowRows?: number | undefined;
}

export const SUMMARY_ERROR_LENGTH = 300;
/** A page of summaries is at most this many JSON bytes (a summary is ~0.3 KB: 1000 fit well within). */
export const MAX_PAGE_BYTES = 1024 * 1024;
export const EMBEDDED_WINDOW_ROWS = 2000;

interface SummaryRow {
  id: string;
  type: string;
  received_at: Date;
  status: EventStatus;
  attempts: number;
  handlers: Record<string, HandlerOutcome>;
  updated_at: Date;
}

/** Each handler's status, attempts and the start of its error: anything longer (a stack) is in GET /events/{id}. */
export function summarizeHandlers(outcomes: Record<string, HandlerOutcome>): Record<string, HandlerOutcome> {
  const handlers: Record<string, HandlerOutcome> = {};
  for (const [key, outcome] of Object.entries(outcomes)) {
    const { status, attempts, error } = outcome;
    handlers[key] =
      error === undefined
        ? { status, attempts }
        : { status, attempts, error: error.length > SUMMARY_ERROR_LENGTH ? `${error.slice(0, SUMMARY_ERROR_LENGTH)}…` : error };
  }
  return handlers;
}

function toSummary(row: SummaryRow): EventSummary {
  const handlers = summarizeHandlers(row.handlers);
  return {
    id: row.id,
    type: row.type,
    receivedAt: row.received_at,
    status: row.status,
    attempts: row.attempts,
    handlers,
    updatedAt: row.updated_at,
  };
}

interface Position {
  receivedAt: Date;
  id: string;
}

/** Where in the (received_at, id) order to look: the query's time range, past `after`, up to `through` (in the query's direction). */
function range(
  q: Pick<ValidEventQuery, "since" | "until" | "newestFirst">,
  after: Position | undefined,
  through?: Position,
): RawBuilder<unknown>[] {
  const where: RawBuilder<unknown>[] = [];
  const [past, upTo] = q.newestFirst ? [sql.raw("<"), sql.raw(">=")] : [sql.raw(">"), sql.raw("<=")];
  if (q.since) where.push(sql`received_at >= ${q.since}::timestamptz`);
  if (q.until) where.push(sql`received_at < ${q.until}::timestamptz`);
  if (after) where.push(sql`(received_at, id) ${past} (${after.receivedAt}::timestamptz, ${after.id}::text)`);
  if (through) where.push(sql`(received_at, id) ${upTo} (${through.receivedAt}::timestamptz, ${through.id}::text)`);
  return where;
}

/** The page's order: oldest first unless the query asks for newest first (the console). */
const logOrder = (q: Pick<ValidEventQuery, "newestFirst">) =>
  q.newestFirst ? sql.raw("order by received_at desc, id desc") : sql.raw("order by received_at, id");

/** The query's other filters as SQL conditions. */
function filters(q: ValidEventQuery): RawBuilder<unknown>[] {
  const where: RawBuilder<unknown>[] = [];
  if (q.type !== undefined) where.push(q.typeIsPattern ? sql`type like ${q.type}` : sql`type = ${q.type}`);
  if (q.status) where.push(sql`status = ${q.status}`);
  // Both forms are answered by the GIN index on handlers (migration 0005).
  if (q.handler !== undefined && q.fingerprint !== undefined)
    where.push(
      sql`handlers @> jsonb_build_object(${q.handler}::text, jsonb_build_object('status', 'failed', 'fingerprint', ${q.fingerprint}::text))`,
    );
  else if (q.handler !== undefined && q.handlerStatus === undefined) where.push(sql`handlers ? ${q.handler}::text`);
  else if (q.handler !== undefined && q.handlerStatus !== undefined)
    where.push(sql`handlers @> jsonb_build_object(${q.handler}::text, jsonb_build_object('status', ${q.handlerStatus}::text))`);
  return where;
}

const whereClause = (where: RawBuilder<unknown>[]) => (where.length > 0 ? sql`where ${sql.join(where, sql` and `)}` : sql``);

/** The statement a page runs (exported so a test can EXPLAIN exactly it). */
export function summaryStatement(q: ValidEventQuery, count: number, after = q.after, through?: Position): RawBuilder<SummaryRow> {
  return sql<SummaryRow>`select id, type, received_at, status, attempts, handlers, updated_at from events
    ${whereClause([...range(q, after, through), ...filters(q)])} ${logOrder(q)} limit ${count}`;
}

/** The last position of the next window of `rows` rows after `after` (by time bounds only), or undefined when fewer remain. */
async function windowEnd(db: Kysely<DatabaseSchema>, q: ValidEventQuery, after: Position | undefined, rows: number) {
  const { rows: found } = await sql<{ received_at: Date; id: string }>`select received_at, id from events ${whereClause(range(q, after))}
    ${logOrder(q)} offset ${rows - 1} limit 1`.execute(db);
  const row = found[0];
  return row ? { receivedAt: row.received_at, id: row.id } : undefined;
}

/** Collects summaries up to `limit` and the byte budget; says whether the page is full. */
class PageBuilder {
  readonly data: EventSummary[] = [];
  private bytes = 2;
  constructor(
    private readonly limit: number,
    private readonly maxBytes: number,
  ) {}

  get full(): boolean {
    return this.data.length >= this.limit;
  }

  /** Adds one; false (and not added) when the page is full by count or bytes. The first always fits. */
  add(summary: EventSummary): boolean {
    if (this.data.length >= this.limit) return false;
    const size = Buffer.byteLength(JSON.stringify(summary)) + 1;
    if (this.data.length > 0 && this.bytes + size > this.maxBytes) return false;
    this.data.push(summary);
    this.bytes += size;
    return true;
  }

  /** A page ending at the last summary added, or at `position` when it is further (the scan went past it). */
  cursorAt(position?: Position): string {
    const last = this.data.at(-1);
    const at = position ?? (last && { receivedAt: last.receivedAt, id: last.id });
    if (!at) throw new Error("cursorAt needs a position or a summary");
    return encodeEventCursor(at.receivedAt, at.id);
  }
}

/** A server: one statement, which statement_timeout and the operator pool bound. */
async function listInOneStatement(db: Kysely<DatabaseSchema>, q: ValidEventQuery, bounds: EventListBounds): Promise<EventPage> {
  const { rows } = await withOperatorTimeout(bounds.timeoutMs, () => summaryStatement(q, q.limit + 1).execute(db));
  const page = new PageBuilder(q.limit, bounds.maxPageBytes);
  for (const row of rows) if (!page.add(toSummary(row))) return { data: page.data, nextCursor: page.cursorAt() };
  return { data: page.data, nextCursor: null };
}

/**
 * The embedded store: window by window of `windowRows` rows in log order, each two short
 * statements, handing the event loop and the connection back in between; stops when the page is
 * full or the time is up, with a cursor where it stopped.
 */
async function listInWindows(
  db: Kysely<DatabaseSchema>,
  q: ValidEventQuery,
  bounds: EventListBounds,
  windowRows: number,
): Promise<EventPage> {
  const deadline = Date.now() + bounds.timeoutMs;
  const page = new PageBuilder(q.limit, bounds.maxPageBytes);
  let after = q.after;
  for (;;) {
    const end = await windowEnd(db, q, after, windowRows);
    const { rows } = await summaryStatement(q, q.limit - page.data.length + 1, after, end).execute(db);
    for (const row of rows) if (!page.add(toSummary(row))) return { data: page.data, nextCursor: page.cursorAt() };
    if (!end) return { data: page.data, nextCursor: null };
    if (page.full) return { data: page.data, nextCursor: page.cursorAt() };
    after = end;
    if (Date.now() >= deadline) return { data: page.data, nextCursor: page.cursorAt(end) };
    // A macrotask turn: queued requests (/healthz, webhooks) and queued statements run now.
    await nextTurn();
  }
}

/** One page of the log, oldest first (newest first when the query says so), as summaries bounded by count and bytes. */
export function listEvents(db: Kysely<DatabaseSchema>, q: ValidEventQuery, bounds: EventListBounds): Promise<EventPage> {
  return bounds.windowRows === undefined ? listInOneStatement(db, q, bounds) : listInWindows(db, q, bounds, bounds.windowRows);
}
