import { sql, type Kysely } from "kysely";

// Released: never edit. Change the schema with a new migration.
//
// The change outbox: one row per change a mirror write made, inserted in the write's own
// transaction, so a change is never lost between the write and the queue. The relay moves rows
// into the events queue in `seq` order and deletes them.

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was then, not today's types
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable("change_outbox")
    .addColumn("seq", "bigserial", (c) => c.primaryKey())
    // The change id (chg_…): the event id and job id end to end, so a re-send is deduplicated.
    .addColumn("id", sql`text collate "C"`, (c) => c.notNull().unique())
    .addColumn("type", "text", (c) => c.notNull())
    .addColumn("payload", "jsonb", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`clock_timestamp()`))
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable("change_outbox").execute();
}
