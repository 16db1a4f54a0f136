import { sql, type Kysely } from "kysely";

// Released: never edit. Change the schema with a new migration.
//
// Records the mirror refused (a value PostgreSQL cannot store, a field missing or of the wrong
// type): one row per (kind, id), kept until the record reads clean again. Every text column holds
// what PostgreSQL text can hold: the record is escaped JSON text (never jsonb, which refuses what
// made the record unstorable), and an id that cannot be a key is kept escaped and shortened.

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was then, not today's types
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable("rejected_records")
    .addColumn("kind", "text", (c) => c.notNull())
    .addColumn("id", sql`text collate "C"`, (c) => c.notNull())
    .addColumn("restaurant_id", "text")
    // A stable code (nul_character, invalid_timestamp, …) and the sentence naming the field.
    .addColumn("reason", "text", (c) => c.notNull())
    .addColumn("detail", "text", (c) => c.notNull())
    .addColumn("raw", "text", (c) => c.notNull())
    .addColumn("first_seen", "timestamptz", (c) => c.notNull().defaultTo(sql`clock_timestamp()`))
    .addColumn("last_seen", "timestamptz", (c) => c.notNull().defaultTo(sql`clock_timestamp()`))
    .addColumn("count", "integer", (c) => c.notNull().defaultTo(1))
    .addPrimaryKeyConstraint("rejected_records_pkey", ["kind", "id"])
    .execute();
  await db.schema.createIndex("rejected_records_last_seen_idx").on("rejected_records").column("last_seen").execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable("rejected_records").execute();
}
