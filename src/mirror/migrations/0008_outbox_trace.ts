import type { Kysely } from "kysely";

// Released: never edit. Change the schema with a new migration.
//
// The trace context of the write that recorded a change (W3C `traceparent`), null when tracing was
// off: the relay makes the change event's job part of that trace, so one trace goes from the
// webhook through the refresh to the change event's handlers.

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was then, not today's types
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable("change_outbox").addColumn("traceparent", "text").execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable("change_outbox").dropColumn("traceparent").execute();
}
