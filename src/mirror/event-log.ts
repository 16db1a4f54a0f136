import { sql, type Kysely, type Selectable } from "kysely";
import type { DatabaseSchema, EventsTable, EventStatus, HandlerOutcome } from "./database-schema.js";
import { EventLogError } from "./event-log-error.js";
import { encodeEventCursor, validateEventQuery, type EventQuery } from "./event-query.js";

export type { EventQuery } from "./event-query.js";
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

export interface EventPage {
  data: LoggedEvent[];
  nextCursor: string | null;
}

export interface EventLog {
  /** Records a delivery: inserts the event, or on a re-delivery counts an attempt and sets status back to `received`. */
  received(event: { id: string; type: string; payload: unknown }): Promise<LoggedEvent>;
  /** Records one handler's outcome; its `attempts` counts the outcomes recorded for it. */
  handlerOutcome(id: string, key: string, outcome: { status: "ok" | "failed"; error?: string }): Promise<void>;
  finish(id: string, status: Exclude<EventStatus, "received">): Promise<void>;
  get(id: string): Promise<LoggedEvent | undefined>;
  /** Oldest first, by (receivedAt, id). */
  query(query?: EventQuery): Promise<EventPage>;
  /** Deletes events received before `olderThan`, `batchSize` rows per statement; returns how many. */
  prune(olderThan: Date, batchSize?: number): Promise<number>;
}

const toEvent = (row: Selectable<EventsTable>): LoggedEvent => ({
  id: row.id,
  type: row.type,
  receivedAt: row.received_at,
  status: row.status,
  payload: row.payload,
  attempts: row.attempts,
  handlers: row.handlers,
  updatedAt: row.updated_at,
});

const MAX_ERROR_LENGTH = 2000;

function checkId(id: unknown, field = "id"): string {
  if (typeof id !== "string" || id === "" || id.length > 200) throw new EventLogError("invalid_event", field, `${field} must be a non-empty string of at most 200 characters`);
  return id;
}

/** The event log in the `events` table: what every worker took and what each handler did with it. */
export function createEventLog(db: Kysely<DatabaseSchema>): EventLog {
  const notFound = (id: string) => new EventLogError("not_found", "id", `no event ${JSON.stringify(id)} in the event log`);

  return {
    async received(event) {
      checkId(event.id);
      checkId(event.type, "type");
      let payload: string | undefined;
      try {
        payload = JSON.stringify(event.payload);
      } catch {
        // a cycle or a BigInt: fall through to the error below
      }
      if (payload === undefined) throw new EventLogError("invalid_event", "payload", "payload must be JSON-serializable");
      const row = await db
        .insertInto("events")
        .values({ id: event.id, type: event.type, payload, status: "received", attempts: 1, handlers: "{}", received_at: sql`date_trunc('milliseconds', clock_timestamp())`, updated_at: sql`clock_timestamp()` })
        .onConflict((oc) => oc.column("id").doUpdateSet({ attempts: sql`events.attempts + 1`, status: "received", updated_at: sql`clock_timestamp()` }))
        .returningAll()
        .executeTakeFirstOrThrow();
      return toEvent(row);
    },

    async handlerOutcome(id, key, outcome) {
      checkId(key, "key");
      if (outcome.status !== "ok" && outcome.status !== "failed") throw new EventLogError("invalid_event", "status", "a handler outcome is ok or failed");
      const error = outcome.error === undefined ? null : String(outcome.error).slice(0, MAX_ERROR_LENGTH);
      // One statement: the new outcome, with this handler's attempts counted on from the stored one.
      const result = await db
        .updateTable("events")
        .set({
          handlers: sql`handlers || jsonb_build_object(${key}::text, jsonb_strip_nulls(jsonb_build_object('status', ${outcome.status}::text, 'error', ${error}::text, 'attempts', coalesce((handlers -> ${key}::text ->> 'attempts')::int, 0) + 1)))`,
          updated_at: sql`clock_timestamp()`,
        })
        .where("id", "=", id)
        .executeTakeFirst();
      if (result.numUpdatedRows === 0n) throw notFound(id);
    },

    async finish(id, status) {
      if (status !== "handled" && status !== "failed") throw new EventLogError("invalid_event", "status", "an event finishes handled or failed");
      const result = await db.updateTable("events").set({ status, updated_at: sql`clock_timestamp()` }).where("id", "=", id).executeTakeFirst();
      if (result.numUpdatedRows === 0n) throw notFound(id);
    },

    async get(id) {
      const row = await db.selectFrom("events").selectAll().where("id", "=", id).executeTakeFirst();
      return row ? toEvent(row) : undefined;
    },

    async query(query) {
      const q = validateEventQuery(query);
      let select = db.selectFrom("events").selectAll().orderBy("received_at").orderBy("id").limit(q.limit + 1);
      if (q.since) select = select.where("received_at", ">=", q.since);
      if (q.until) select = select.where("received_at", "<", q.until);
      if (q.type !== undefined) select = q.typeIsPattern ? select.where("type", "like", q.type) : select.where("type", "=", q.type);
      if (q.status) select = select.where("status", "=", q.status);
      if (q.handler !== undefined) select = select.where(sql<boolean>`handlers -> ${q.handler}::text is not null`);
      if (q.handler !== undefined && q.handlerStatus) select = select.where(sql<boolean>`handlers -> ${q.handler}::text ->> 'status' = ${q.handlerStatus}::text`);
      if (q.after) select = select.where(sql<boolean>`(received_at, id) > (${q.after.receivedAt}::timestamptz, ${q.after.id}::text)`);
      const rows = await select.execute();
      const page = rows.slice(0, q.limit).map(toEvent);
      const last = page[page.length - 1];
      return { data: page, nextCursor: rows.length > q.limit && last ? encodeEventCursor(last.receivedAt, last.id) : null };
    },

    async prune(olderThan, batchSize = 500) {
      if (!(olderThan instanceof Date) || Number.isNaN(olderThan.getTime())) throw new EventLogError("invalid_filter", "olderThan", "olderThan must be a valid date");
      if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) throw new EventLogError("invalid_filter", "batchSize", "batchSize must be an integer from 1 to 10000");
      // Small batches, each its own statement (and transaction): short locks, no long table scan
      // under one lock; SKIP LOCKED lets two pruners run at once without waiting on each other.
      let total = 0;
      for (;;) {
        const result = await db
          .deleteFrom("events")
          .where("id", "in", (eb) => eb.selectFrom("events").select("id").where("received_at", "<", olderThan).orderBy("received_at").limit(batchSize).forUpdate().skipLocked())
          .executeTakeFirst();
        const deleted = Number(result.numDeletedRows);
        total += deleted;
        if (deleted < batchSize) return total;
      }
    },
  };
}
