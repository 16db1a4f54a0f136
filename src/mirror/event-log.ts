import { sql, type Kysely, type Selectable } from "kysely";
import type { DatabaseSchema, EventsTable, EventStatus, HandlerOutcome } from "./database-schema.js";
import { EventLogError } from "./event-log-error.js";
import { errorFingerprint } from "./error-fingerprint.js";
import { boundedErrorText, boundedStack, MAX_ERROR_MESSAGE_CHARS } from "../events/error-text.js";
import { idProblem } from "./id-text.js";
import { pruneInBatches } from "./prune-in-batches.js";
import { EMBEDDED_WINDOW_ROWS, listEvents, MAX_PAGE_BYTES, type EventListBounds, type EventPage } from "./event-list.js";
import { validateEventQuery } from "./event-query.js";
import { withOperatorTimeout } from "./operator-query-timeout-error.js";
import { DEFAULTS } from "../config/defaults.js";
import { groupCommit } from "../queue/group-commit.js";
import { fromStoredPayload, needsEscapedForm, storableText, toEscapedForm } from "./stored-payload.js";

import type { EventQuery } from "./event-query.js";
export type { EventQuery } from "./event-query.js";
export type { EventPage, EventSummary } from "./event-list.js";
export type { EventStatus, HandlerOutcome } from "./database-schema.js";

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

/** What one attempt at an event did, recorded once when the attempt ends. */
export interface EventAttempt {
  id: string;
  type: string;
  /** The payload as delivered; stored on the event's first record only. */
  payload: unknown;
  /** `handled`, `failed` (for good), or `received` (this attempt failed and the job will retry). */
  status: EventStatus;
  /** The outcome of each handler this attempt ran (those done on an earlier attempt are not run again). */
  handlers: Record<string, { status: "ok" | "failed"; error?: string; stack?: string }>;
  /**
   * The attempt starts a new round (a replay's first run): its status replaces whatever the log
   * holds. Otherwise a status only moves forward (received → failed → handled), so an attempt
   * whose record lands late never undoes a later one's outcome.
   */
  newRound?: boolean;
}

export interface EventLog {
  /**
   * Records one attempt: inserts the event (attempts 1), or on a later attempt counts one more,
   * sets the status and merges these handler outcomes into the stored ones (each handler's
   * `attempts` counting the outcomes recorded for it). Within a round the status never goes back
   * (received < failed < handled): a late write that would lower it counts its attempt and adds
   * outcomes of handlers the log does not hold yet, and changes nothing else. Concurrent calls are written together in
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
  /**
   * Oldest first, by (receivedAt, id): summaries without payloads (fetch one with `get`), a page
   * bounded by `limit` and by bytes, an operator read bounded in time (see EventLogOptions).
   */
  query(query?: EventQuery): Promise<EventPage>;
  /** Deletes events received before `olderThan`, `batchSize` rows per statement; returns how many. */
  prune(olderThan: Date, batchSize?: number): Promise<number>;
}

const toEvent = (row: Selectable<EventsTable>): LoggedEvent => ({
  id: row.id,
  type: row.type,
  receivedAt: row.received_at,
  status: row.status,
  payload: fromStoredPayload(row.payload),
  attempts: row.attempts,
  handlers: row.handlers,
  updatedAt: row.updated_at,
});

const STATUSES: readonly string[] = ["received", "handled", "failed"];

/** One attempt as a JSON object of the statement's recordset: validated and serialized per attempt, so one bad payload fails only its own call. */
interface Row {
  id: string;
  json: string;
}

function attemptRow(attempt: EventAttempt): Row {
  const id = checkId(attempt.id);
  checkId(attempt.type, "type");
  if (!STATUSES.includes(attempt.status))
    throw new EventLogError("invalid_event", "status", "an attempt ends received (to be retried), handled or failed");
  const handlers: Record<string, { status: "ok" | "failed"; error?: string; stack?: string; fingerprint?: string; attempts: 1 }> = {};
  for (const [key, outcome] of Object.entries(attempt.handlers)) {
    checkId(key, "key");
    // Callers may be untyped JavaScript: check what the type promises.
    const status: unknown = outcome.status;
    if (status !== "ok" && status !== "failed") throw new EventLogError("invalid_event", "status", "a handler outcome is ok or failed");
    handlers[key] = { status: outcome.status, attempts: 1 };
    // Error text is free text (a message may quote the payload): bounded, and made storable in jsonb.
    if (outcome.error !== undefined) {
      handlers[key].error = storableText(boundedErrorText(outcome.error, MAX_ERROR_MESSAGE_CHARS));
      handlers[key].fingerprint = errorFingerprint(handlers[key].error);
    }
    if (typeof outcome.stack === "string") handlers[key].stack = storableText(boundedStack(outcome.stack));
  }
  let json: string | undefined;
  try {
    const row = (payload: unknown) =>
      JSON.stringify({ id, type: attempt.type, status: attempt.status, handlers, payload, new_round: attempt.newRound === true });
    json = row(attempt.payload);
    // jsonb refuses \u0000 and lone surrogates: such a payload is kept as JSON text (stored-payload.ts).
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
 */
async function upsertAttempts(db: Kysely<DatabaseSchema>, rows: Row[]): Promise<void> {
  const json = `[${rows.map((r) => r.json).join(",")}]`;
  // The ids of one statement are distinct (distinctIds), so `v` has one row per conflicting id.
  const rank = (status: string) => `array_position(array['received', 'failed', 'handled'], ${status})`;
  const stale = sql.raw(`(not (select v.new_round from v where v.id = excluded.id) and ${rank("excluded.status")} < ${rank("e.status")})`);
  await sql`
    with v as (
      select * from jsonb_to_recordset(${json}::jsonb) as v(id text, type text, payload jsonb, status text, handlers jsonb, new_round boolean)
    )
    insert into events as e (id, type, payload, status, attempts, handlers, received_at, updated_at)
    select v.id, v.type, v.payload, v.status, 1, v.handlers, date_trunc('milliseconds', clock_timestamp()), clock_timestamp()
    from v
    on conflict (id) do update set
      attempts = e.attempts + 1,
      status = case when ${stale} then e.status else excluded.status end,
      handlers = e.handlers || coalesce((
        select jsonb_object_agg(
          h.key,
          (case when ${stale} then coalesce(e.handlers -> h.key, h.value) else h.value end)
            || jsonb_build_object('attempts', coalesce((e.handlers -> h.key ->> 'attempts')::int, 0) + 1))
        from jsonb_each(excluded.handlers) as h
      ), '{}'::jsonb),
      updated_at = clock_timestamp()`.execute(db);
}

function checkId(id: unknown, field = "id"): string {
  if (typeof id !== "string" || id === "" || id.length > 200)
    throw new EventLogError("invalid_event", field, `${field} must be a non-empty string of at most 200 characters`);
  return id;
}

export interface EventLogOptions {
  maxBatch?: number;
  /** Where `get` and `query` read (operator reads: a server's operator pool); default `db`. */
  reader?: Kysely<DatabaseSchema>;
  /** How `query` is bounded; default: MAX_PAGE_BYTES, 5 s, one statement. */
  bounds?: Partial<EventListBounds>;
}

/** The bounds an operator read of `database` gets: windows on the embedded store, one cancellable statement on a server. */
export const operatorBounds = (database: { driver: "server" | "embedded"; operatorQueryTimeoutMs: number }): Partial<EventListBounds> => ({
  timeoutMs: database.operatorQueryTimeoutMs,
  windowRows: database.driver === "embedded" ? EMBEDDED_WINDOW_ROWS : undefined,
});

/** The event log in the `events` table: what every worker took and what each handler did with it. */
export function createEventLog(db: Kysely<DatabaseSchema>, options: EventLogOptions = {}): EventLog {
  const reader = options.reader ?? db;
  const bounds: EventListBounds = { maxPageBytes: MAX_PAGE_BYTES, timeoutMs: DEFAULTS.operatorQueryTimeoutMs, ...options.bounds };
  // Each call learns whether the statement holding its row committed. A refused multi-row
  // statement is retried row by row, so one row the database cannot take (a payload holding
  // \u0000, which jsonb refuses) fails only its own attempt, not every attempt batched with it.
  const record = groupCommit(async (rows: Row[]) => {
    const outcome = new Map<Row, unknown>();
    for (const part of distinctIds(rows)) {
      const error = await upsertAttempts(db, part).then(
        () => undefined,
        (err: unknown) => err ?? new Error("event log write failed"),
      );
      if (error === undefined || part.length === 1) {
        for (const row of part) outcome.set(row, error);
        continue;
      }
      for (const row of part) {
        outcome.set(
          row,
          await upsertAttempts(db, [row]).then(
            () => undefined,
            (err: unknown) => err ?? new Error("event log write failed"),
          ),
        );
      }
    }
    return rows.map((row) => outcome.get(row));
  }, options.maxBatch ?? 1000);

  // The worker asks this for every event it reads fresh from the stream: one indexed read per batch.
  const held = groupCommit(async (ids: string[]) => {
    const rows = await db
      .selectFrom("events")
      .select("id")
      .where("id", "in", [...new Set(ids)])
      .execute();
    const found = new Set(rows.map((r) => r.id));
    return ids.map((id) => found.has(id));
  }, options.maxBatch ?? 1000);

  return {
    async recordAttempt(attempt) {
      const error = await record(attemptRow(attempt));
      if (error !== undefined) throw error instanceof Error ? error : new Error("event log write failed", { cause: error });
    },

    holds: (id) => held(checkId(id)),

    async get(id) {
      const problem = idProblem(id);
      if (problem) throw new EventLogError("invalid_filter", "id", `id ${problem}`);
      const row = await withOperatorTimeout(bounds.timeoutMs, () =>
        reader.selectFrom("events").selectAll().where("id", "=", id).executeTakeFirst(),
      );
      return row ? toEvent(row) : undefined;
    },

    async query(query) {
      return listEvents(reader, validateEventQuery(query), bounds);
    },

    prune(olderThan, batchSize = 500) {
      return pruneInBatches(olderThan, batchSize, async (limit) => {
        const result = await db
          .deleteFrom("events")
          .where("id", "in", (eb) =>
            eb
              .selectFrom("events")
              .select("id")
              .where("received_at", "<", olderThan)
              .orderBy("received_at")
              .limit(limit)
              .forUpdate()
              .skipLocked(),
          )
          .executeTakeFirst();
        return Number(result.numDeletedRows);
      });
    },
  };
}
