import { sql, type Kysely } from "kysely";

// Released: never edit. Change the schema with a new migration.
//
// Ids an event named that the API did not list within SYNC_UNLISTED_GIVE_UP_SECONDS: the refresh
// stopped looking and reported them here (with a metric and a warning) instead of dropping them
// silently. One row per (kind, id); deleted when the record is later written to the mirror.
// (0007 and 0008 are other changes of the same release.)

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was then, not today's types
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable("unlisted_records")
    .addColumn("kind", "text", (c) => c.notNull())
    .addColumn("id", sql`text collate "C"`, (c) => c.notNull())
    .addColumn("restaurant_id", "text", (c) => c.notNull())
    // The first events that named the id (at most 20).
    .addColumn("event_ids", sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'`))
    .addColumn("first_noted_at", "timestamptz", (c) => c.notNull())
    .addColumn("given_up_at", "timestamptz", (c) => c.notNull().defaultTo(sql`clock_timestamp()`))
    // Refresh rounds that looked for it.
    .addColumn("attempts", "integer", (c) => c.notNull())
    .addPrimaryKeyConstraint("unlisted_records_pkey", ["kind", "id"])
    .execute();
  await db.schema.createIndex("unlisted_records_given_up_at_idx").on("unlisted_records").column("given_up_at").execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable("unlisted_records").execute();
}
