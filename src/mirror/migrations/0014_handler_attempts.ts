import { sql, type Kysely } from "kysely";

// Released: never edit. Change the schema with a new migration.
//
// Every attempt of every handler of an event, one row each: when it started, how long it ran, its
// outcome and error, when the next attempt comes and "attempt n of N". Written in the statement
// that records the attempt in `events`, and deleted with the event by retention (prune). The
// attempt number runs on across retries and replays, as log lines and ctx.attempt number them;
// each handler keeps its latest KEPT_ATTEMPTS_PER_HANDLER (handler-attempts.ts) rows, so a replay
// loop cannot grow an event without end. No foreign key: the writes of the hot path stay one
// insert without a check against `events`, and prune deletes both in one statement. (Named 0014,
// not the unused 0012: Kysely applies migrations in name order and refuses one that sorts before
// a migration the database already ran.)

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was then, not today's types
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable("handler_attempts")
    .addColumn("event_id", sql`text collate "C"`, (c) => c.notNull())
    .addColumn("handler_key", "text", (c) => c.notNull())
    .addColumn("attempt", "integer", (c) => c.notNull())
    // N of "attempt n of N": the last attempt its round may reach (a replay's round numbers on).
    .addColumn("attempts_max", "integer", (c) => c.notNull())
    .addColumn("started_at", "timestamptz", (c) => c.notNull())
    .addColumn("duration_ms", "integer", (c) => c.notNull())
    .addColumn("outcome", "text", (c) => c.notNull().check(sql`outcome in ('ok', 'failed')`))
    // The handler's error, bounded as the event's own outcome is (events/error-text.ts).
    .addColumn("error", "text")
    // When the next attempt is due; null when none follows (it succeeded, or failed for good).
    .addColumn("next_retry_at", "timestamptz")
    // With its start: two replays of an event that run at once both number on from the same
    // count, as their log lines do, and both are kept; a run recorded again replaces its row.
    .addPrimaryKeyConstraint("handler_attempts_pkey", ["event_id", "handler_key", "attempt", "started_at"])
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable("handler_attempts").execute();
}
