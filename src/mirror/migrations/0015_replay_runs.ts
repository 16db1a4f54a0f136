import type { Kysely } from "kysely";

// Released: never edit. Change the schema with a new migration.
//
// A replay is a run of its own: its attempts number from 1 to JOB_ATTEMPTS again ("attempt n of N,
// replay k"), as Svix's and Hookdeck's manual retries are attempts of their own kind. `events.replays`
// counts the event's runs after its first delivery (the statement recording a replay's first
// attempt adds one), and each handler attempt names the run it belongs to (0: the first delivery).
// Rows recorded before are runs of 0: their numbers ran on across replays, and stay as written.

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was then, not today's types
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .alterTable("events")
    .addColumn("replays", "integer", (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable("handler_attempts")
    .addColumn("replay", "integer", (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable("handler_attempts").dropColumn("replay").execute();
  await db.schema.alterTable("events").dropColumn("replays").execute();
}
