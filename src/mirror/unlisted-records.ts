import { sql, type Kysely, type Transaction } from "kysely";
import type { DatabaseSchema } from "./database-schema.js";
import { storableText } from "./postgres-values.js";
import type { MirrorKind, UnlistedRecord } from "./store.js";

// The unlisted records table (migrations.ts, 0009_unlisted_records): ids events named that the API
// never listed within the give-up time, reported by the refresh, forgotten once the record is written.

/** Records (or records again) an id a refresh gave up on. Ids and event ids are kept as storable text. */
export async function recordUnlisted(db: Kysely<DatabaseSchema>, row: UnlistedRecord): Promise<void> {
  const values = {
    kind: row.kind,
    id: storableText(row.id, 1000),
    restaurant_id: storableText(row.restaurantId, 1000),
    event_ids: row.eventIds.map((e) => storableText(e, 200)),
    first_noted_at: row.firstNotedAt,
    attempts: row.attempts,
  };
  await db
    .insertInto("unlisted_records")
    .values(values)
    .onConflict((oc) =>
      oc.columns(["kind", "id"]).doUpdateSet({
        restaurant_id: sql.ref("excluded.restaurant_id"),
        event_ids: sql.ref("excluded.event_ids"),
        first_noted_at: sql.ref("excluded.first_noted_at"),
        attempts: sql.ref("excluded.attempts"),
        given_up_at: sql`clock_timestamp()`,
      }),
    )
    .execute();
}

/** Forgets the ids a write just stored: they are listed after all. Call inside the upsert's transaction. */
export async function clearUnlisted(tx: Transaction<DatabaseSchema>, kind: MirrorKind, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await tx.deleteFrom("unlisted_records").where("kind", "=", kind).where("id", "in", ids).execute();
}

/** The ids given up on (of a kind, or all), by kind and id. */
export async function listUnlisted(db: Kysely<DatabaseSchema>, kind?: MirrorKind): Promise<UnlistedRecord[]> {
  let query = db.selectFrom("unlisted_records").selectAll().orderBy("kind").orderBy("id");
  if (kind !== undefined) query = query.where("kind", "=", kind);
  const rows = await query.execute();
  return rows.map((r) => ({
    kind: r.kind as MirrorKind,
    id: r.id,
    restaurantId: r.restaurant_id,
    eventIds: r.event_ids,
    firstNotedAt: new Date(r.first_noted_at),
    givenUpAt: new Date(r.given_up_at),
    attempts: r.attempts,
  }));
}
