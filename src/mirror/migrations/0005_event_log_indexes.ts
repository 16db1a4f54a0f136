import { sql, type Kysely } from "kysely";

// Released: never edit. Change the schema with a new migration.
//
// GET /events?handler= filters on the keys of the `handlers` jsonb (`handlers ? key`, and with
// handlerStatus `handlers @> {key: {status}}`): without an index that is a scan of the whole log
// (1.0 s at 500k rows on a server). A GIN index with the default jsonb_ops answers both operators.
// (The other filters, received_at, status and type, have indexes since 0002.)

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was then, not today's types
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createIndex("events_handlers_idx")
    .on("events")
    .using("gin")
    .expression(sql`handlers`)
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropIndex("events_handlers_idx").execute();
}
