import { sql, type Kysely } from "kysely";

// Released: never edit. Change the schema with a new migration.
//
// Durable steps (ctx.step): one row per (event, handler, step name) holding the step's JSON
// result once it is done, so a retry or a replay of the event gets the result back instead of
// running the step again. `replay --fresh` deletes an event's rows; retention prunes by
// started_at with the event log. No foreign key to `events`: an event's row is written when its
// attempt ends, after the steps it ran.

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was then, not today's types
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable("steps")
    .addColumn("event_id", sql`text collate "C"`, (c) => c.notNull())
    .addColumn("handler_key", "text", (c) => c.notNull())
    .addColumn("name", "text", (c) => c.notNull())
    // started: running, or its process died before recording the result; failed: the step's
    // function threw (nothing stored, it runs again); done: `result` holds what it returned.
    .addColumn("status", "text", (c) => c.notNull().check(sql`status in ('started', 'done', 'failed')`))
    // SQL NULL: the step returned undefined; jsonb null: it returned null.
    .addColumn("result", "jsonb")
    .addColumn("result_bytes", "integer")
    .addColumn("error", "text")
    // How many times the step's function was started: above 1 means a run after a crash or a throw.
    .addColumn("runs", "integer", (c) => c.notNull().defaultTo(1))
    .addColumn("attempt", "integer", (c) => c.notNull())
    .addColumn("started_at", "timestamptz", (c) => c.notNull().defaultTo(sql`clock_timestamp()`))
    .addColumn("finished_at", "timestamptz")
    .addColumn("duration_ms", "integer")
    .addPrimaryKeyConstraint("steps_pkey", ["event_id", "handler_key", "name"])
    .execute();
  await db.schema.createIndex("steps_started_at_idx").on("steps").column("started_at").execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable("steps").execute();
}
