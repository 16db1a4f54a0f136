import { sql, type Kysely } from "kysely";

// Released: never edit. Change the schema with a new migration.
//
// Handler keys were positional (`user:order.created:0`, the first handler of that type from that
// source) and are now named (`user:order.created`, `user:order.created:audit`), so reordering a
// HANDLERS_MODULE no longer hands one handler's step records to another. SQL cannot know a
// handler's name (it is in the module), so step records are rewritten when the worker starts with
// the module loaded (mirror/handler-key-renames.ts). This table records each rename done, so each
// is done once, by one worker, however many start together.

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was then, not today's types
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable("handler_key_renames")
    .addColumn("from_key", "text", (c) => c.primaryKey())
    .addColumn("to_key", "text", (c) => c.notNull())
    // How many step records the rename moved.
    .addColumn("steps", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("renamed_at", "timestamptz", (c) => c.notNull().defaultTo(sql`clock_timestamp()`))
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable("handler_key_renames").execute();
}
