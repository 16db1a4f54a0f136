import type { Kysely } from "kysely";

// Released: never edit. Change the schema with a new migration.
//
// When the workers last ran (one row per mark, `seen_at` by the database's clock), kept in
// PostgreSQL because it must outlive Redis: a worker that starts, or ticks, and finds the mark
// old knows that webhooks may have been lost meanwhile and catches up (worker/gap-watch.ts).

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was then, not today's types
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable("sync_liveness")
    .addColumn("name", "text", (c) => c.primaryKey())
    .addColumn("seen_at", "timestamptz", (c) => c.notNull())
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable("sync_liveness").execute();
}
