import { sql, type Kysely, type Selectable } from "kysely";
import type { DatabaseSchema, EventsTable, EventStatus, HandlerOutcome } from "./database-schema.js";
import { EventLogError } from "./event-log-error.js";
import { readHandlerAttempts, type HandlerAttempt } from "./handler-attempts.js";
import { idProblem } from "./id-text.js";
import { pruneInBatches } from "./prune-in-batches.js";
import { EMBEDDED_WINDOW_ROWS, listEvents, MAX_PAGE_BYTES, type EventListBounds, type EventPage } from "./event-list.js";
import { validateEventQuery } from "./event-query.js";
import { withOperatorTimeout } from "./operator-query-timeout-error.js";
import { DEFAULTS } from "../config/defaults.js";
import { groupCommit } from "../queue/ingest-stream.js";
import { attemptRow, checkId, distinctIds, upsertAttempts, type EventAttempt, type Row } from "./record-attempts.js";
import { fromStoredPayload } from "./stored-payload.js";

import type { EventQuery } from "./event-query.js";
export type { EventQuery } from "./event-query.js";
export type { EventPage, EventSummary } from "./event-list.js";
export type { EventStatus, HandlerOutcome } from "./database-schema.js";
export type { EventAttempt } from "./record-attempts.js";
export type { HandlerAttempt, HandlerRun } from "./handler-attempts.js";

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
  /** Deletes events received before `olderThan` with their handler attempts, `batchSize` events per statement; returns how many events. */
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

    async handlerAttempts(id) {
      const problem = idProblem(id);
      if (problem) throw new EventLogError("invalid_filter", "id", `id ${problem}`);
      return withOperatorTimeout(bounds.timeoutMs, () => readHandlerAttempts(reader, id));
    },

    async query(query) {
      return listEvents(reader, validateEventQuery(query), bounds);
    },

    prune(olderThan, batchSize = 500) {
      return pruneInBatches(olderThan, batchSize, async (limit) => {
        // An event and its handler attempts go in one statement: no attempt outlives its event.
        const { rows } = await sql<{ deleted: number }>`
          with gone as (
            delete from events where id in (
              select id from events where received_at < ${olderThan} order by received_at limit ${limit} for update skip locked
            )
            returning id
          ),
          attempts as (delete from handler_attempts where event_id in (select id from gone))
          select count(*)::int as deleted from gone`.execute(db);
        return rows[0]?.deleted ?? 0;
      });
    },
  };
}
