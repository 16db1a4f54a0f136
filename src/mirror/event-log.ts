import { sql, type Kysely, type Selectable, type RawBuilder } from "kysely";
import {
  EVENT_STATUSES,
  HANDLER_STATUSES,
  type DatabaseSchema,
  type EventsTable,
  type EventStatus,
  type HandlerOutcome,
  type HandlerStatus,
} from "./database.js";
import { DEFAULT_ACCOUNT, DEFAULTS } from "../config/defaults.js";
import { checkedId, checkLimit, checkListParams, EventLogError, MirrorFilterError, withOperatorTimeout } from "./errors.js";
import {
  cursorText,
  toCursor,
  isInt32,
  loggedStatus,
  fromStoredPayload,
  needsEscapedForm,
  storableFreeText,
  toEscapedForm,
} from "./values.js";
import { idProblem, MAX_ID_LENGTH, shortened } from "../base/text.js";
import { isStorableDate, isValidDate, parseIsoInstant } from "../base/iso-time.js";
import { fittingRows } from "./mirror-store.js";
import { boundedErrorText, boundedStack, MAX_ERROR_MESSAGE_CHARS } from "../events/errors.js";

import { groupCommit } from "../base/group-commit.js";

/** One event as the log holds it. */
export interface LoggedEvent {
  id: string;
  type: string;
  /** First delivery to a worker, by the database's clock (millisecond precision). */
  receivedAt: Date;
  status: EventStatus;
  /** The payload as first delivered. */
  payload: unknown;
  /** Deliveries to a worker: 1, plus one per retry or replay. */
  attempts: number;
  /** Each handler's latest outcome, by handler key. */
  handlers: Record<string, HandlerOutcome>;
  updatedAt: Date;
}

export interface EventLog {
  /** The account (company) whose events this log records and reads: every query is scoped to it. */
  readonly account: string;
  /**
   * Records one attempt: inserts the event (attempts 1), or on a later attempt counts one more,
   * sets the status and merges these handler outcomes into the stored ones (each handler's
   * `attempts` counting the outcomes recorded for it). Within a round the status never goes back
   * (received < failed < handled): a late write that would lower it counts its attempt and adds
   * outcomes of handlers the log does not hold yet, and changes nothing else. Each outcome with a
   * `run` is kept as a row of the event's handler attempts (the latest KEPT_ATTEMPTS_PER_HANDLER
   * per handler), in the same statement. Concurrent calls are written together in
   * one statement (group commit); each call resolves or rejects with the statement that held it.
   */
  recordAttempt(attempt: EventAttempt): Promise<void>;
  /**
   * Whether the log holds an event of this id (a delivery of it was taken before, within
   * EVENT_RETENTION_DAYS). Concurrent calls share one statement (group commit).
   */
  holds(id: string): Promise<boolean>;
  /** One event whole, payload included. */
  get(id: string): Promise<LoggedEvent | undefined>;
  /** Every kept attempt of every handler of an event (by handler key, then attempt); none for an unknown id. */
  handlerAttempts(id: string): Promise<HandlerAttempt[]>;
  /**
   * Oldest first, by (receivedAt, id): summaries without payloads (fetch one with `get`), a page
   * bounded by `limit` and by bytes, an operator read bounded in time (see EventLogOptions).
   */
  query(query?: EventQuery): Promise<EventPage>;
  /**
   * Deletes events received before `olderThan` with their handler attempts, `batchSize` events per
   * statement, and the changes no handler received (record_changes) recorded before it; returns how many events.
   */
  prune(olderThan: Date, batchSize?: number): Promise<number>;
  /**
   * Events waiting for a retry (status received: their latest attempt failed and another follows),
   * oldest first by (receivedAt, id) past `after`, at most `limit`: each with the job its next
   * attempt runs in and where its run stands, as its latest attempt recorded them.
   */
  waiting(after: LogPosition | undefined, limit: number): Promise<WaitingEvent[]>;
}

/** An event the log holds as waiting for a retry, as createJobRestorer enqueues it again. */
export interface WaitingEvent {
  id: string;
  type: string;
  receivedAt: Date;
  /** The payload as first delivered. */
  payload: unknown;
  /** The job its next attempt runs in; null when its latest attempt was recorded before jobs were (0016_event_jobs). */
  job: string | null;
  /** The handlers whose latest attempt in the event's current run failed: those its next attempt runs. */
  retry: string[];
  /** The current run's latest attempt ("attempt n of N"); undefined when none of its handler attempts is kept. */
  attempt?: { number: number; of: number };
  /** When the next attempt is due, as its latest attempt recorded it; undefined when no time was recorded. */
  nextRetryAt?: Date;
}

const toEvent = (row: Selectable<EventsTable>): LoggedEvent => ({
  ...toEnvelope(row, row.handlers),
  payload: fromStoredPayload(row.payload),
});

export interface EventLogOptions {
  /**
   * The account (company) this log is scoped to: event ids are unique only within one.
   * @defaultValue DEFAULT_ACCOUNT
   */
  account?: string;
  /** Where `get` and `query` read (operator reads: a server's operator pool); default `db`. */
  reader?: Kysely<DatabaseSchema>;
  /** How `query` is bounded; default: MAX_PAGE_BYTES, 5 s, one statement. */
  bounds?: Partial<EventListBounds>;
}

/** Attempts (or ids asked about) written (or read) in one statement at most. */
const MAX_BATCH = 1000;

/** The event log in the `events` table: what every worker took and what each handler did with it. */
export function createEventLog(db: Kysely<DatabaseSchema>, options: EventLogOptions = {}): EventLog {
  const reader = options.reader ?? db;
  const account = options.account ?? DEFAULT_ACCOUNT;
  const bounds: EventListBounds = { maxPageBytes: MAX_PAGE_BYTES, timeoutMs: DEFAULTS.operatorQueryTimeoutMs, ...options.bounds };
  // Each call learns whether the statement holding its row committed. A refused multi-row
  // statement is retried row by row, so one row the database cannot take (a payload holding
  // \u0000, which jsonb refuses) fails only its own attempt, not every attempt batched with it.
  const write = (part: Row[]) =>
    upsertAttempts(db, account, part).then(
      () => undefined,
      (err: unknown) => err ?? new Error("event log write failed"),
    );
  const record = groupCommit(async (rows: Row[]) => {
    const outcome = new Map<Row, unknown>();
    for (const part of distinctIds(rows)) {
      const error = await write(part);
      for (const row of part) outcome.set(row, error === undefined || part.length === 1 ? error : await write([row]));
    }
    return rows.map((row) => outcome.get(row));
  }, MAX_BATCH);

  // The worker asks this for every event it reads fresh from the stream: one indexed read per batch.
  const held = groupCommit(async (ids: string[]) => {
    const rows = await db
      .selectFrom("events")
      .select("id")
      .where("account_id", "=", account)
      .where("id", "in", [...new Set(ids)])
      .execute();
    const found = new Set(rows.map((r) => r.id));
    return ids.map((id) => found.has(id));
  }, MAX_BATCH);

  return {
    account,
    async recordAttempt(attempt) {
      // An attempt is recorded in its own company's part of the log only (the worker picks the part).
      if (attempt.account !== undefined && attempt.account !== account)
        throw new EventLogError("invalid_event", "account", `an attempt of account ${attempt.account} goes to that account's log`);
      const error = await record(attemptRow(attempt));
      if (error !== undefined) throw error instanceof Error ? error : new Error("event log write failed", { cause: error });
    },

    holds: (id) => held(checkId(id)),

    async get(id) {
      const row = await withOperatorTimeout(bounds.timeoutMs, () =>
        reader.selectFrom("events").selectAll().where("account_id", "=", account).where("id", "=", checkedId("id", id)).executeTakeFirst(),
      );
      return row ? toEvent(row) : undefined;
    },

    handlerAttempts: (id) => withOperatorTimeout(bounds.timeoutMs, () => readHandlerAttempts(reader, account, checkedId("id", id))),

    query: async (query) => listEvents(reader, account, validateEventQuery(query), bounds),

    waiting: (after, limit) => readWaiting(db, account, after, limit),

    async prune(olderThan, batchSize = 500) {
      const events = await pruneInBatches(olderThan, batchSize, async (limit) => {
        // An event and its handler attempts go in one statement: no attempt outlives its event.
        const { rows } = await sql<{ deleted: number }>`
          with gone as (
            delete from events where account_id = ${account} and id in (
              select id from events where account_id = ${account} and received_at < ${olderThan}
              order by received_at limit ${limit} for update skip locked
            )
            returning id
          ),
          attempts as (delete from handler_attempts where account_id = ${account} and event_id in (select id from gone))
          select count(*)::int as deleted from gone`.execute(db);
        return rows[0]?.deleted ?? 0;
      });
      // The changes no handler received (their records' history) go with the log they stand beside.
      // Nothing hangs off a history row, so one plain delete a batch (as the steps' prune).
      await pruneInBatches(olderThan, batchSize, async (limit) => {
        const result = await sql`
          delete from record_changes where ctid in (
            select ctid from record_changes where account_id = ${account} and created_at < ${olderThan}
            order by created_at limit ${limit} for update skip locked
          )`.execute(db);
        return Number(result.numAffectedRows ?? 0);
      });
      return events;
    },
  };
}

const DEFAULT_EVENT_LIMIT = 100;
const MAX_EVENT_LIMIT = 1000;

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
  handlerStatus?: HandlerStatus;
  /** …and it failed with an error of this fingerprint (errorFingerprint; needs `handler`). */
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
  after?: LogPosition;
}

const TYPE = /^(\*|[a-z][a-z0-9_]*(\.[a-z0-9_]+)*(\.\*)?)$/;

/** A row's place in the log's order, (received_at, id): what a page's cursor points past. */
export interface LogPosition {
  receivedAt: Date;
  id: string;
}

export const encodeEventCursor = (receivedAt: Date, id: string) => toCursor(`${receivedAt.toISOString()}|${id}`);

// What encodeEventCursor writes: a millisecond UTC timestamp (years 0001–9999), a bar, an event id.
const CURSOR_TEXT = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)\|([^]+)$/;

/** A cursor must decode to what this log could have written: a valid time and a storable id. */
export function decodeEventCursor(cursor: string): LogPosition {
  const refuse = (why: string) =>
    new MirrorFilterError("cursor", `cursor is not one this log returned (${why}); pass nextCursor unchanged`);
  const text = cursorText(cursor, 2000);
  if (text === undefined) throw refuse("not base64url text");
  const parts = CURSOR_TEXT.exec(text);
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
  if (!parsed.ok) throw new MirrorFilterError(field, `${field} ${parsed.problem}`);
  return parsed.instant;
}

/** Checks an event query; throws MirrorFilterError naming the first bad field. */
export function validateEventQuery(query: EventQuery = {}): ValidEventQuery {
  const valid: ValidEventQuery = { typeIsPattern: false, limit: DEFAULT_EVENT_LIMIT };
  for (const bound of ["since", "until"] as const) {
    if (query[bound] === undefined) continue;
    if (!isStorableDate(query[bound])) throw new MirrorFilterError(bound, `${bound} must be a valid date in the years 0001–9999`);
    valid[bound] = query[bound];
  }
  if (query.type !== undefined) {
    if (typeof query.type !== "string" || !TYPE.test(query.type))
      throw new MirrorFilterError("type", "type must be an event type (order.created), a family (order.*) or *");
    if (query.type.endsWith("*")) {
      // Only letters, digits, _ and . reach here; _ is a LIKE wildcard, so escape it.
      if (query.type !== "*") valid.type = `${query.type.slice(0, -1).replaceAll("_", "\\_")}%`;
      valid.typeIsPattern = query.type !== "*";
    } else valid.type = query.type;
  }
  if (query.status !== undefined) {
    if (!(EVENT_STATUSES as readonly string[]).includes(query.status))
      throw new MirrorFilterError("status", `status must be one of ${EVENT_STATUSES.join(", ")}, retrying`);
    valid.status = query.status;
  }
  if (query.handler !== undefined) {
    // A handler key is an id (events/dispatch.ts refuses to register any other): a name may hold spaces or any letter.
    valid.handler = checkedId("handler", query.handler);
  }
  if (query.handlerStatus !== undefined) {
    if (valid.handler === undefined) throw new MirrorFilterError("handlerStatus", "handlerStatus needs handler");
    if (!(HANDLER_STATUSES as readonly string[]).includes(query.handlerStatus))
      throw new MirrorFilterError("handlerStatus", "handlerStatus must be ok or failed");
    valid.handlerStatus = query.handlerStatus;
  }
  if (query.fingerprint !== undefined) {
    if (valid.handler === undefined) throw new MirrorFilterError("fingerprint", "fingerprint needs handler");
    if (valid.handlerStatus === "ok")
      throw new MirrorFilterError("fingerprint", "fingerprint selects failed outcomes; handlerStatus ok contradicts it");
    const problem = typeof query.fingerprint === "string" ? idProblem(query.fingerprint, FINGERPRINT_LENGTH) : "must be text";
    if (problem) throw new MirrorFilterError("fingerprint", `fingerprint ${problem}`);
    valid.fingerprint = query.fingerprint;
  }
  valid.limit = checkLimit(query.limit, MAX_EVENT_LIMIT) ?? valid.limit;
  if (query.cursor !== undefined) valid.after = decodeEventCursor(query.cursor);
  if (query.newestFirst === true) valid.newestFirst = true;
  return valid;
}

/**
 * The names the log's events are selected by, as text parameters (eventQueryFromParams reads each):
 * GET /events's, a bulk replay's, the console's and the CLI's filters are these or some of them.
 */
export const EVENT_FILTERS = ["since", "until", "type", "status", "handler", "handlerStatus", "fingerprint"] as const;
type EventFilter = (typeof EVENT_FILTERS)[number];

/**
 * The filters a replay by filter takes: all but `handlerStatus`, since its `handler` selects the
 * events on which that handler failed (worker/replays.ts). What POST /events/replay's body
 * accepts, and what the console's events page offers (its filters are handed to a bulk replay).
 */
export const REPLAY_FILTER_FIELDS: readonly Exclude<EventFilter, "handlerStatus">[] = EVENT_FILTERS.filter((f) => f !== "handlerStatus");

/** The parameters GET /events takes besides `account`: the filters and a page's (the operator API's document lists these). */
export const EVENT_QUERY_PARAMS = [...EVENT_FILTERS, "limit", "cursor", "order"] as const;

/**
 * An event query from text parameters (URL query, CLI flags): dates as ISO 8601, `limit` as a
 * number. Unknown parameters are refused, so a typo is a 400 rather than an unfiltered log.
 */

export function eventQueryFromParams(params: Record<string, string | undefined>): EventQuery {
  const limit = checkListParams(params, EVENT_QUERY_PARAMS, MAX_EVENT_LIMIT);
  const query: EventQuery = limit === undefined ? {} : { limit };
  for (const bound of ["since", "until"] as const) {
    const text = params[bound];
    if (text !== undefined) query[bound] = parseBound(bound, text);
  }
  // Checked by validateEventQuery, as the typed fields are.
  for (const field of ["type", "handler", "handlerStatus", "fingerprint", "cursor"] as const)
    if (params[field] !== undefined) (query as Record<string, string>)[field] = params[field];
  // "retrying": the last attempt failed and the job will try again, which the log records as "received".
  if (params.status !== undefined) query.status = loggedStatus(params.status) as EventStatus;
  if (params.order !== undefined) {
    if (params.order !== "newest" && params.order !== "oldest") throw new MirrorFilterError("order", "order must be newest or oldest");
    query.newestFirst = params.order === "newest";
  }
  return query;
}

/**
 * One event in a list: everything but the payload (GET /events/{id} has it), each handler's
 * error cut to SUMMARY_ERROR_LENGTH (the event itself has it whole, with any stack).
 */
export type EventSummary = Omit<LoggedEvent, "payload"> & {
  /**
   * The record the event names, as the log's generated columns hold it (0013_event_records): the
   * mirror's kind (orders, bookings, menu-items, reviews) and `data.id`, at most 200 characters;
   * null when it names none. So a list says what each event is about without reading payloads.
   */
  record: { kind: string; id: string } | null;
};

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
  /** The statement is cancelled after this long (statement_timeout on the operator pool; here too, for a reader without it). */
  timeoutMs: number;
}

const SUMMARY_ERROR_LENGTH = 300;
/** A page of summaries is at most this many JSON bytes (a summary is ~0.3 KB: 1000 fit well within). */
export const MAX_PAGE_BYTES = 1024 * 1024;

/** The columns a summary reads: every one but the payload. */
const SUMMARY_COLUMNS = ["id", "type", "received_at", "status", "attempts", "handlers", "updated_at", "record_kind", "record_id"] as const;
type SummaryRow = Pick<Selectable<EventsTable>, (typeof SUMMARY_COLUMNS)[number]>;

/** Each handler's status, attempts and the start of its error: anything longer (a stack) is in GET /events/{id}. */
export function summarizeHandlers(outcomes: Record<string, HandlerOutcome>): Record<string, HandlerOutcome> {
  return Object.fromEntries(
    Object.entries(outcomes).map(([key, { status, attempts, error }]) => [
      key,
      error === undefined ? { status, attempts } : { status, attempts, error: shortened(error, SUMMARY_ERROR_LENGTH) },
    ]),
  );
}

/** A row's envelope as the log shows it (no payload). */
function toEnvelope(row: SummaryRow, handlers: Record<string, HandlerOutcome>): Omit<LoggedEvent, "payload"> {
  const { id, type, status, attempts } = row;
  return { id, type, receivedAt: row.received_at, status, attempts, handlers, updatedAt: row.updated_at };
}

/** A row as a list shows it: each handler's error cut (summarizeHandlers), and the record it names. */
function toSummary(row: SummaryRow): EventSummary {
  const record = row.record_kind !== null && row.record_id !== null ? { kind: row.record_kind, id: row.record_id } : null;
  return { ...toEnvelope(row, summarizeHandlers(row.handlers)), record };
}

/** The rows past `after` in the (received_at, id) order: later ones, or earlier ones when reading newest first. */
export const pastPosition = (after: LogPosition, newestFirst = false) =>
  sql`(received_at, id) ${sql.raw(newestFirst ? "<" : ">")} (${after.receivedAt}::timestamptz, ${after.id}::text)`;

/** Where in the (received_at, id) order to look: the query's time range, past its `after` (in the query's direction). */
function range(q: Pick<ValidEventQuery, "since" | "until" | "newestFirst" | "after">): RawBuilder<unknown>[] {
  const where: RawBuilder<unknown>[] = [];
  if (q.since) where.push(sql`received_at >= ${q.since}::timestamptz`);
  if (q.until) where.push(sql`received_at < ${q.until}::timestamptz`);
  if (q.after) where.push(pastPosition(q.after, q.newestFirst));
  return where;
}

/** The page's order: oldest first unless the query asks for newest first (the console). */
export const logOrder = (q: Pick<ValidEventQuery, "newestFirst">) =>
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

/** The statement a page of one account's log runs (exported so a test can EXPLAIN exactly it). */
export function summaryStatement(q: ValidEventQuery, count: number, account = DEFAULT_ACCOUNT): RawBuilder<SummaryRow> {
  // The account first: it leads every index of the log (0017_accounts).
  return sql<SummaryRow>`select ${sql.raw(SUMMARY_COLUMNS.join(", "))} from events
    ${whereClause([sql`account_id = ${account}`, ...range(q), ...filters(q)])} ${logOrder(q)} limit ${count}`;
}

/** One page of the log, oldest first (newest first when the query says so), as summaries bounded by count and bytes: one statement, which statement_timeout and the operator pool bound. */
async function listEvents(db: Kysely<DatabaseSchema>, account: string, q: ValidEventQuery, bounds: EventListBounds): Promise<EventPage> {
  const { rows } = await withOperatorTimeout(bounds.timeoutMs, () => summaryStatement(q, q.limit + 1, account).execute(db));
  // The page as JSON: its two brackets, then each summary and its comma. The first always fits.
  const size = (summary: EventSummary) => Buffer.byteLength(JSON.stringify(summary)) + 1;
  const data = fittingRows(rows.slice(0, q.limit).map(toSummary), size, bounds.maxPageBytes - 2);
  const last = data.at(-1);
  return { data, nextCursor: rows.length > data.length && last ? encodeEventCursor(last.receivedAt, last.id) : null };
}

/** A handler's error as the log stores it: bounded, and storable in jsonb. */
export const storedErrorText = (error: string): string => storableFreeText(boundedErrorText(error, MAX_ERROR_MESSAGE_CHARS));

/** The failure group's fingerprint of a handler's error, as the log stores it (the failures page's groups). */
export const outcomeFingerprint = (error: string): string => errorFingerprint(storedErrorText(error));

/** Failed handler outcomes of one handler with one error fingerprint, over a time range. */
export interface FailureGroup {
  handler: string;
  /**
   * What the group's errors share: the first line with ids, numbers, times and hex masked
   * (errorFingerprint). Outcomes logged before fingerprints were stored group by their first line.
   */
  fingerprint: string;
  /** Whether every outcome of the group has the fingerprint stored: only then does a fingerprint filter (GET /events, replays) select all of them. */
  fingerprinted: boolean;
  /** An example: the newest event's error, its first line cut to FAILURE_MESSAGE_LENGTH characters. */
  error: string;
  /** `failed`: given up on (dead letters); `received`: the last attempt failed and the job will retry. */
  status: Exclude<EventStatus, "handled">;
  events: number;
  firstAt: Date;
  lastAt: Date;
  /** One event of the group (the newest), to open. */
  sampleId: string;
}

const FAILURE_MESSAGE_LENGTH = 200;
/** Groups returned at most (largest first). */
const MAX_FAILURE_GROUPS = 100;

/** A group as the statement reads it: what a group says, before counts, times and missing text are made plain. */
type GroupRow = Omit<FailureGroup, "fingerprint" | "error" | "events"> & {
  fingerprint: string | null;
  error: string | null;
  events: string | number;
};

/**
 * What failed or is retrying in [since, until), grouped by handler, error fingerprint and event
 * status, largest group first: an event whose handler keeps failing with the same error counts
 * once in that group, and errors that differ only in the ids they name are one group. Reads only events whose status is failed or received (a received row is one whose
 * last attempt failed: the log records an attempt when it ends), through the received_at index.
 */
export async function listFailureGroups(
  db: Kysely<DatabaseSchema>,
  range: { since: Date; until?: Date | undefined },
  timeoutMs: number,
  account = DEFAULT_ACCOUNT,
): Promise<FailureGroup[]> {
  const until = range.until ? sql`and e.received_at < ${range.until}::timestamptz` : sql``;
  const message = sql`left(split_part(coalesce(h.value ->> 'error', ''), chr(10), 1), ${FAILURE_MESSAGE_LENGTH})`;
  const { rows } = await withOperatorTimeout(timeoutMs, () =>
    sql<GroupRow>`select h.key as handler, coalesce(h.value ->> 'fingerprint', ${message}) as fingerprint,
        bool_and(h.value ? 'fingerprint') as fingerprinted, (array_agg(${message} order by e.received_at desc))[1] as error,
        e.status as status, count(*) as events,
        min(e.received_at) as "firstAt", max(e.received_at) as "lastAt", (array_agg(e.id order by e.received_at desc))[1] as "sampleId"
      from events e cross join lateral jsonb_each(e.handlers) as h
      where e.account_id = ${account} and e.status in ('failed', 'received') and e.received_at >= ${range.since}::timestamptz ${until}
        and h.value ->> 'status' = 'failed'
      group by 1, 2, e.status order by count(*) desc, max(e.received_at) desc limit ${MAX_FAILURE_GROUPS}`.execute(db),
  );
  return rows.map((r) => ({
    ...r,
    fingerprint: r.fingerprint ?? "",
    error: r.error ?? "",
    events: Number(r.events),
    firstAt: new Date(r.firstAt),
    lastAt: new Date(r.lastAt),
  }));
}

/**
 * How many attempts of one handler of one event the log keeps: the latest 50 by start. Recording
 * one more deletes the older ones in the same statement, so an event replayed in a loop keeps
 * a bounded history (its `attempts` count and each handler's latest outcome still count them all).
 */
export const KEPT_ATTEMPTS_PER_HANDLER = 50;

/**
 * When and how one handler ran in one attempt, as the attempt runner hands it to the event log.
 * Times are milliseconds since the epoch: a job's progress carries runs whose record is pending.
 */
export interface HandlerRun {
  /** The attempt's number in its run: 1 for the run's first (log lines' `attempt`, ctx.attempt); see attempt-runner.ts' attemptOfJob. */
  attempt: number;
  /** N of "attempt n of N": the last attempt this run may reach (JOB_ATTEMPTS for a first delivery or a replay). */
  of: number;
  startedAt: number;
  durationMs: number;
  /** When the next attempt is due: set on a failure that will be retried. */
  nextRetryAt?: number;
}

/** One attempt of one handler, as GET /events/{id} (`handlerAttempts`) and the console's event page show it. */
export interface HandlerAttempt {
  handler: string;
  /** The run the attempt belongs to: 0 for the event's first delivery, k for its k-th replay. */
  replay: number;
  attempt: number;
  of: number;
  startedAt: Date;
  durationMs: number;
  outcome: HandlerStatus;
  /** The error's text as the handler threw it, bounded (events/errors.ts). */
  error: string | null;
  /** When the next attempt is (or was) due; null when none followed this one. */
  nextRetryAt: Date | null;
}

const count = (value: unknown, min: number) => isInt32(value) && value >= min;
const instant = (value: unknown) => typeof value === "number" && Number.isFinite(value) && !Number.isNaN(new Date(value).getTime());

/**
 * A handler's run checked (callers may be untyped JavaScript) and shaped for the statement: a run
 * as the recording statement reads it (jsonb_to_recordset in upsertAttempts).
 */
function runRow(handler: string, outcome: HandlerStatus, error: string | undefined, run: HandlerRun) {
  const { attempt, of, startedAt, durationMs, nextRetryAt } = run;
  if (
    !count(attempt, 1) ||
    !count(of, 1) ||
    !count(durationMs, 0) ||
    !instant(startedAt) ||
    (nextRetryAt !== undefined && !instant(nextRetryAt))
  )
    throw new EventLogError(
      "invalid_event",
      "run",
      "a handler's run has an attempt and an `of` from 1, a duration in whole milliseconds, and epoch-millisecond times",
    );
  return {
    handler,
    attempt,
    attempts_max: of,
    started_at: new Date(startedAt).toISOString(),
    duration_ms: durationMs,
    outcome,
    error: error ?? null,
    next_retry_at: nextRetryAt === undefined ? null : new Date(nextRetryAt).toISOString(),
  };
}

/** Every kept attempt of every handler of an event, by handler key, then run, attempt and start (see the migration's key). */
async function readHandlerAttempts(db: Kysely<DatabaseSchema>, account: string, eventId: string): Promise<HandlerAttempt[]> {
  const { rows } = await sql<HandlerAttempt>`
    select handler_key as handler, replay, attempt, attempts_max as of, started_at as "startedAt", duration_ms as "durationMs",
      outcome, error, next_retry_at as "nextRetryAt"
    from handler_attempts where account_id = ${account} and event_id = ${eventId}
    order by handler_key, replay, attempt, started_at`.execute(db);
  return rows;
}

/** A row of readWaiting's statement. */
type WaitingRow = Pick<Selectable<EventsTable>, "id" | "type" | "received_at" | "payload" | "job_id" | "handlers"> & {
  attempt: number | null;
  of: number | null;
  next_retry_at: Date | null;
  retry: string[] | null;
};

/**
 * A page of waiting events (through events_status_idx). Each handler's latest kept attempt in the
 * event's current run (`replay` = events.replays) says where the run stands: the highest attempt
 * is the run's latest, the failed ones are what the next attempt runs, and their next retry time
 * is when it is due. Without kept attempts (recorded without runs) the failed outcomes say it.
 */
async function readWaiting(
  db: Kysely<DatabaseSchema>,
  account: string,
  after: ValidEventQuery["after"],
  limit: number,
): Promise<WaitingEvent[]> {
  const past = after ? sql`and ${pastPosition(after)}` : sql``;
  const { rows } = await sql<WaitingRow>`
    select e.id, e.type, e.received_at, e.payload, e.job_id, e.handlers, w.attempt, w.of, w.next_retry_at, w.retry
    from events e
    cross join lateral (
      select max(a.attempt) as attempt, max(a.attempts_max) as of, max(a.next_retry_at) as next_retry_at,
        array_agg(a.handler_key order by a.handler_key) filter (where a.outcome = 'failed') as retry
      from (
        select distinct on (handler_key) handler_key, attempt, attempts_max, next_retry_at, outcome
        from handler_attempts where account_id = e.account_id and event_id = e.id and replay = e.replays
        order by handler_key, started_at desc
      ) a
    ) w
    where e.account_id = ${account} and e.status = 'received' ${past}
    ${logOrder({})} limit ${limit}`.execute(db);
  return rows.map((r) => ({
    id: r.id,
    type: r.type,
    receivedAt: r.received_at,
    payload: fromStoredPayload(r.payload),
    job: r.job_id,
    retry: r.retry ?? Object.keys(r.handlers).filter((key) => r.handlers[key]?.status === "failed"),
    ...(r.attempt !== null && r.of !== null ? { attempt: { number: r.attempt, of: r.of } } : {}),
    ...(r.next_retry_at ? { nextRetryAt: new Date(r.next_retry_at) } : {}),
  }));
}

/** One handler's outcome in one attempt. */
export interface HandlerOutcomeData {
  status: HandlerStatus;
  error?: string;
  /** The failed handler's error's stack (bounded): where in its code it failed. */
  stack?: string;
  /** When and how long it ran, in which attempt: a row of the event's handler attempts once recorded. */
  run?: HandlerRun;
}

/** What one attempt at an event did, recorded once when the attempt ends. */
export interface EventAttempt {
  id: string;
  type: string;
  /** The payload as delivered; stored on the event's first record only. */
  payload: unknown;
  /** `handled`, `failed` (for good), or `received` (this attempt failed and the job will retry). */
  status: EventStatus;
  /**
   * The outcome of each handler this attempt ran (those done on an earlier attempt are not run
   * again), and of those an earlier attempt ran whose record is pending. Each with a `run` is also
   * a row of the event's handler attempts (handler_attempts).
   */
  handlers: Record<string, HandlerOutcomeData>;
  /**
   * The attempt starts a new round, a run of its own (a replay's first attempt): `events.replays`
   * counts one more, its handler attempts name that run, and its status replaces whatever the log
   * holds. Otherwise a status only moves forward (received → failed → handled), so an attempt
   * whose record lands late never undoes a later one's outcome.
   */
  newRound?: boolean;
  /** The registered account the event was delivered for (POST /webhooks/{account}); absent for the log's own. */
  account?: string;
  /**
   * The BullMQ job the event's next attempt runs in, should this one be retried: the job of this
   * attempt, or the job a first attempt from the ingest stream continues as (named after its
   * entry). A waiting event whose job Redis lost is enqueued again under it (createJobRestorer).
   */
  job?: string;
}

/** One attempt as a JSON object of the statement's recordset: validated and serialized per attempt, so one bad payload fails only its own call. */
interface Row {
  id: string;
  json: string;
}

/** A handler's outcome as `events.handlers` stores it (HandlerOutcome, before its attempts are counted on). */
type StoredOutcome = Omit<HandlerOutcome, "attempts"> & { attempts: 1 };

function attemptRow(attempt: EventAttempt): Row {
  const id = checkId(attempt.id);
  checkId(attempt.type, "type");
  if (!(EVENT_STATUSES as readonly string[]).includes(attempt.status))
    throw new EventLogError("invalid_event", "status", "an attempt ends received (to be retried), handled or failed");
  if (attempt.job !== undefined) checkId(attempt.job, "job");
  const handlers: Record<string, StoredOutcome> = {};
  const runs: ReturnType<typeof runRow>[] = [];
  for (const [key, outcome] of Object.entries(attempt.handlers)) {
    checkId(key, "key");
    // Callers may be untyped JavaScript: check what the type promises.
    const status: unknown = outcome.status;
    if (!(HANDLER_STATUSES as readonly unknown[]).includes(status))
      throw new EventLogError("invalid_event", "status", "a handler outcome is ok or failed");
    const stored: StoredOutcome = { status: outcome.status, attempts: 1 };
    // Error text is free text (a message may quote the payload): bounded, and made storable in jsonb.
    if (outcome.error !== undefined) {
      stored.error = storedErrorText(outcome.error);
      stored.fingerprint = errorFingerprint(stored.error);
    }
    if (typeof outcome.stack === "string") stored.stack = storableFreeText(boundedStack(outcome.stack));
    handlers[key] = stored;
    if (outcome.run !== undefined) runs.push(runRow(key, outcome.status, stored.error, outcome.run));
  }
  let json: string | undefined;
  try {
    const row = (payload: unknown) =>
      JSON.stringify({
        id,
        type: attempt.type,
        status: attempt.status,
        handlers,
        runs,
        payload,
        new_round: attempt.newRound === true,
        job: attempt.job ?? null,
      });
    json = row(attempt.payload);
    // jsonb refuses \u0000 and lone surrogates: such a payload is kept as JSON text (values.ts).
    if (needsEscapedForm(attempt.payload, json)) json = row(toEscapedForm(JSON.stringify(attempt.payload)));
  } catch {
    // a cycle or a BigInt: fall through to the error below
  }
  if (json === undefined || attempt.payload === undefined)
    throw new EventLogError("invalid_event", "payload", "payload must be JSON-serializable");
  return { id, json };
}

/**
 * The rows split into runs in which no id repeats (one INSERT … ON CONFLICT may not touch a row
 * twice), each id's attempts kept in the order they ended.
 */
function distinctIds(rows: Row[]): Row[][] {
  const parts: { ids: Set<string>; rows: Row[] }[] = [];
  for (const row of rows) {
    let i = parts.length;
    // After the last part already holding this id: its attempts stay in order.
    while (i > 0 && !parts[i - 1]?.ids.has(row.id)) i--;
    const part = parts[i] ?? (parts[i] = { ids: new Set(), rows: [] });
    part.ids.add(row.id);
    part.rows.push(row);
  }
  return parts.map((p) => p.rows);
}

/**
 * One statement for many attempts: the rows travel as one jsonb array. A new event is inserted with
 * each handler's attempts at 1; a known one counts an attempt, takes the new status and merges
 * the outcomes, each handler's attempts counted on from its stored outcome. A stale attempt (one
 * that would lower the status within its round: it ended before the stored one but its record
 * landed after) takes neither the status nor the outcomes of handlers the log already holds.
 * The payload and received_at stay as first recorded.
 *
 * The same statement writes each handler's run as a row of handler_attempts (a run recorded again,
 * after a lost answer, replaces its row: same attempt, same start), numbered with the event's run
 * (a new round counts one more replay first), and keeps that handler's latest
 * KEPT_ATTEMPTS_PER_HANDLER rows by start (the statement sees the rows before it: the latest
 * KEPT_ATTEMPTS_PER_HANDLER - 1 of them stay beside the new one; attempt numbers start again in
 * each run, so they cannot order rows across runs): the hot path's one round trip stays one.
 */
async function upsertAttempts(db: Kysely<DatabaseSchema>, account: string, rows: Row[]): Promise<void> {
  const json = `[${rows.map((r) => r.json).join(",")}]`;
  // The ids of one statement are distinct (distinctIds), so `v` has one row per conflicting id.
  const rank = (status: string) => `array_position(array['received', 'failed', 'handled'], ${status})`;
  const stale = sql.raw(`(not (select v.new_round from v where v.id = excluded.id) and ${rank("excluded.status")} < ${rank("e.status")})`);
  await sql`
    with v as (
      select * from jsonb_to_recordset(${json}::jsonb)
        as v(id text, type text, payload jsonb, status text, handlers jsonb, runs jsonb, new_round boolean, job text)
    ),
    logged as (
      insert into events as e (account_id, id, type, payload, status, attempts, handlers, received_at, updated_at, job_id)
      select ${account}, v.id, v.type, v.payload, v.status, 1, v.handlers, date_trunc('milliseconds', clock_timestamp()), clock_timestamp(), v.job
      from v
      on conflict (account_id, id) do update set
        attempts = e.attempts + 1,
        replays = e.replays + case when (select v.new_round from v where v.id = excluded.id) then 1 else 0 end,
        status = case when ${stale} then e.status else excluded.status end,
        -- The job goes with the status: a stale attempt's job is no longer where the event waits.
        job_id = case when ${stale} then e.job_id else coalesce(excluded.job_id, e.job_id) end,
        handlers = e.handlers || coalesce((
          select jsonb_object_agg(
            h.key,
            (case when ${stale} then coalesce(e.handlers -> h.key, h.value) else h.value end)
              || jsonb_build_object('attempts', coalesce((e.handlers -> h.key ->> 'attempts')::int, 0) + 1))
          from jsonb_each(excluded.handlers) as h
        ), '{}'::jsonb),
        updated_at = clock_timestamp()
      returning e.id, e.replays
    ),
    r as (
      select v.id as event_id, logged.replays as replay, r.*
      from v join logged on logged.id = v.id cross join lateral jsonb_to_recordset(v.runs) as r(
        handler text, attempt int, attempts_max int, started_at timestamptz, duration_ms int, outcome text, error text, next_retry_at timestamptz)
    ),
    kept as (
      insert into handler_attempts as a (account_id, event_id, handler_key, replay, attempt, attempts_max, started_at, duration_ms, outcome, error, next_retry_at)
      select ${account}, event_id, handler, replay, attempt, attempts_max, started_at, duration_ms, outcome, error, next_retry_at from r
      on conflict (account_id, event_id, handler_key, attempt, started_at) do update set
        replay = excluded.replay, attempts_max = excluded.attempts_max, duration_ms = excluded.duration_ms,
        outcome = excluded.outcome, error = excluded.error, next_retry_at = excluded.next_retry_at
    )
    delete from handler_attempts as a using r
    where a.account_id = ${account} and a.event_id = r.event_id and a.handler_key = r.handler and a.started_at < (
      select b.started_at from handler_attempts as b
      where b.account_id = ${account} and b.event_id = r.event_id and b.handler_key = r.handler
      order by b.started_at desc offset ${KEPT_ATTEMPTS_PER_HANDLER - 2} limit 1
    )`.execute(db);
}

function checkId(id: unknown, field = "id"): string {
  if (typeof id !== "string" || id === "" || id.length > MAX_ID_LENGTH)
    throw new EventLogError("invalid_event", field, `${field} must be a non-empty string of at most ${MAX_ID_LENGTH} characters`);
  return id;
}

/** A fingerprint is at most this many characters (the masked first line of the error, cut). */
export const FINGERPRINT_LENGTH = 200;

// Each mask is applied in turn; earlier ones take what later ones would cut apart (a timestamp's
// digits, a UUID's hex, an id's digits).
const MASKS: readonly (readonly [RegExp, string])[] = [
  // ISO 8601 instants and dates: 2026-11-24T05:00:00.123Z, 2026-11-24 05:00, 2026-11-24.
  [/\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?/g, "<time>"],
  [/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, "<id>"],
  // Prefixed ids keep their prefix (ord_<id>, evt_<id>): the kind of record stays readable. An id
  // is a suffix holding a digit, or a short prefix before 6+ characters (the API's base36 ids
  // need not hold a digit), so words like status_changed stay as they are.
  [/\b([A-Za-z][A-Za-z0-9]*)_(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{4,}\b/g, "$1_<id>"],
  [/\b([a-z]{1,4})_[a-z0-9]{6,}\b/g, "$1_<id>"],
  [/\b0x[0-9a-f]+\b/gi, "<hex>"],
  // Hex runs of 8 or more holding a letter and a digit: hashes, trace ids, object ids.
  [/\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{8,}\b/gi, "<hex>"],
  [/\d+(?:\.\d+)*/g, "<n>"],
];

/**
 * The fingerprint of a handler's error: its first line with ids, numbers, times and hex masked,
 * so the failures of one bug that differ only in the order or event they name are one group.
 * Pure: the event log stores it with each failed outcome, and failure groups and bulk replays
 * select by it.
 *
 * @example errorFingerprint("order ord_7f3k2a9q not found after 3 tries") === "order ord_<id> not found after <n> tries"
 */
export function errorFingerprint(error: string): string {
  let text = (error.split("\n", 1)[0] ?? "").trim();
  for (const [pattern, mask] of MASKS) text = text.replace(pattern, mask);
  return text.slice(0, FINGERPRINT_LENGTH);
}

/** Rows one prune statement deletes at most. */
const MAX_PRUNE_BATCH = 10_000;

/**
 * Deletes what is older than `olderThan` in batches of `batchSize` rows, each batch its own
 * statement (and transaction): short locks and no long scan under one lock. `deleteBatch` deletes
 * at most `limit` rows (SKIP LOCKED, so two pruners do not wait on each other) and says how many.
 * Returns how many rows were deleted in all.
 */
export async function pruneInBatches(olderThan: Date, batchSize: number, deleteBatch: (limit: number) => Promise<number>): Promise<number> {
  if (!isValidDate(olderThan)) throw new MirrorFilterError("olderThan", "olderThan must be a valid date");
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_PRUNE_BATCH)
    throw new MirrorFilterError("batchSize", `batchSize must be an integer from 1 to ${MAX_PRUNE_BATCH}`);
  let total = 0;
  for (;;) {
    const deleted = await deleteBatch(batchSize);
    total += deleted;
    if (deleted < batchSize) return total;
  }
}

/** A stored handler key and the key the same handler has now. */
export interface HandlerKeyRename {
  from: string;
  to: string;
}

/** A rename this call made (one made before is skipped), with how many step records it moved. */
export interface AppliedHandlerKeyRename extends HandlerKeyRename {
  steps: number;
}

/**
 * Moves the step records stored under each `from` key to its `to` key, in every account (handler
 * keys come from the handlers module, which every account shares), each rename once ever
 * (recorded in `handler_key_renames`, migration 0011), in one transaction and one pass over
 * `steps`: a worker starting beside this one waits for it, then finds the renames done. A step
 * the handler already has under its new key (it ran since) is kept; the old row is left to
 * retention. The event log keeps earlier outcomes under the keys they ran under.
 */
export async function renameHandlerKeys(
  db: Kysely<DatabaseSchema>,
  renames: readonly HandlerKeyRename[],
): Promise<AppliedHandlerKeyRename[]> {
  if (renames.length === 0) return [];
  return db.transaction().execute(async (tx) => {
    const { rows: claimed } = await sql<{ from_key: string; to_key: string }>`
      insert into handler_key_renames (from_key, to_key)
      select * from unnest(${renames.map((r) => r.from)}::text[], ${renames.map((r) => r.to)}::text[])
      on conflict (from_key) do nothing
      returning from_key, to_key`.execute(tx);
    if (claimed.length === 0) return [];
    const { rows: moved } = await sql<{ from_key: string; steps: number }>`
      with moved as (
        update steps s set handler_key = r.to_key
        from handler_key_renames r
        where r.from_key = any(${claimed.map((c) => c.from_key)}::text[]) and s.handler_key = r.from_key
          and not exists (select 1 from steps n
            where n.account_id = s.account_id and n.event_id = s.event_id and n.handler_key = r.to_key and n.name = s.name)
        returning r.from_key
      )
      select from_key, count(*)::int as steps from moved group by from_key`.execute(tx);
    const counts = new Map(moved.map((m) => [m.from_key, m.steps]));
    await sql`
      update handler_key_renames r set steps = c.steps
      from unnest(${[...counts.keys()]}::text[], ${[...counts.values()]}::int[]) as c(from_key, steps)
      where r.from_key = c.from_key`.execute(tx);
    return claimed.map((c) => ({ from: c.from_key, to: c.to_key, steps: counts.get(c.from_key) ?? 0 }));
  });
}
