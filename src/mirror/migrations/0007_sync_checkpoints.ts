import { sql, type Kysely } from "kysely";

// Released: never edit. Change the schema with a new migration.
//
// Where each resumable walk of a whole list stands: the full reconciliation tier (`tier` full)
// and the backfill command (`tier` backfill), one row per kind. Saved after every page, so a
// crash, a Ctrl-C or the end of a bounded slice resumes at the next page instead of page one.
// `cursor` is the upstream's opaque continuation (null: the pass starts at the top, or is done).
// `first_import`: the mirror held nothing of the kind when the pass began, so its writes are
// `backfill` changes, not missed webhooks. `since`: the window a backfill was asked for.

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was then, not today's types
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable("sync_checkpoints")
    .addColumn("tier", "text", (c) => c.notNull().check(sql`tier in ('full', 'backfill')`))
    .addColumn("kind", "text", (c) => c.notNull())
    .addColumn("cursor", "text")
    .addColumn("pass_started_at", "timestamptz", (c) => c.notNull())
    // null while the pass runs.
    .addColumn("pass_completed_at", "timestamptz")
    .addColumn("records", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("pages", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("first_import", "boolean", (c) => c.notNull().defaultTo(false))
    .addColumn("since", "text")
    // When the last pass that reached the end of the list completed (kept while a new one runs).
    .addColumn("last_complete_at", "timestamptz")
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`clock_timestamp()`))
    .addPrimaryKeyConstraint("sync_checkpoints_pkey", ["tier", "kind"])
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable("sync_checkpoints").execute();
}
