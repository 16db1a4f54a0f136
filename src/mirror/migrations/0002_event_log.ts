import { sql, type Kysely } from "kysely";

// Released: never edit. Change the schema with a new migration.
//
// The event log: every event a worker takes, as delivered, with each handler's outcome.

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was then, not today's types
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable("events")
    .addColumn("id", sql`text collate "C"`, (c) => c.primaryKey())
    .addColumn("type", "text", (c) => c.notNull())
    // Millisecond precision, truncated (a timestamptz(3) alone would round up into the future), so
    // a JavaScript Date — a filter bound or a page cursor — holds a stored instant exactly.
    .addColumn("received_at", sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`date_trunc('milliseconds', clock_timestamp())`))
    .addColumn("status", "text", (c) =>
      c
        .notNull()
        .defaultTo("received")
        .check(sql`status in ('received', 'handled', 'failed')`),
    )
    .addColumn("payload", "jsonb", (c) => c.notNull())
    .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(1))
    .addColumn("handlers", "jsonb", (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`clock_timestamp()`))
    .execute();
  // Queries page by (received_at, id); prune walks received_at; replays filter by status and type.
  await db.schema.createIndex("events_received_at_idx").on("events").columns(["received_at", "id"]).execute();
  await db.schema.createIndex("events_status_idx").on("events").columns(["status", "received_at"]).execute();
  await db.schema
    .createIndex("events_type_idx")
    .on("events")
    .expression(sql`type text_pattern_ops, received_at`)
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable("events").execute();
}
