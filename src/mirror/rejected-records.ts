import { createHash } from "node:crypto";
import { sql, type Kysely, type Transaction } from "kysely";
import type { DatabaseSchema } from "./database-schema.js";
import { cutAt, fitsKey, storableText } from "./postgres-values.js";
import type { MirrorKind, RejectedRecord, RejectionRow } from "./store.js";

// The rejected records table (migrations.ts, 0004_rejected_records): what the mirror could not
// hold, one row per (kind, id), written in the upsert's own transaction and cleared there when the
// record reads clean again.

/** A refused record with what the table keeps of it. */
export interface Rejection extends RejectedRecord {
  /** The record's id as a key the table (and an advisory lock) can take: see `rejectionKey`. */
  key: string;
  restaurantId: string | null;
  raw: string;
}

/** Rows per statement: 6 parameters each, far below PostgreSQL's 65,535. */
const CHUNK = 200;

/**
 * The id as the table's key: as it is when PostgreSQL can hold it; NUL and lone surrogates as JSON
 * escapes; an id too long for an index shortened, with a hash of the whole so two stay apart.
 */
export function rejectionKey(id: string): string {
  const text = storableText(id);
  if (fitsKey(text)) return text;
  return `${cutAt(text, 200)}…sha256:${createHash("sha256").update(id).digest("hex")}`;
}

/** What the table keeps of a refused record: escaped text only, so the row itself can always be written. */
export function toRejection(rejected: RejectedRecord & { id: string }, record: unknown): Rejection {
  const restaurantId = (record as { restaurantId?: unknown } | null)?.restaurantId;
  return {
    ...rejected,
    key: rejectionKey(rejected.id),
    restaurantId: typeof restaurantId === "string" ? storableText(restaurantId, 1000) : null,
    // JSON.stringify escapes NUL and lone surrogates (well-formed stringify), so this is storable text.
    // `?? null`: JSON.stringify(undefined) is no string (typed callers cannot pass one; JavaScript can).
    raw: JSON.stringify(record ?? null),
  };
}

/** Records (or re-counts) refused records; call under the write's advisory locks, in key order. */
export async function recordRejections(tx: Transaction<DatabaseSchema>, kind: MirrorKind, rejections: readonly Rejection[]): Promise<void> {
  const sorted = [...rejections].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  for (let i = 0; i < sorted.length; i += CHUNK) {
    await tx
      .insertInto("rejected_records")
      .values(
        sorted.slice(i, i + CHUNK).map((r) => ({
          kind,
          id: r.key,
          restaurant_id: r.restaurantId,
          reason: r.reason,
          detail: r.message,
          raw: r.raw,
        })),
      )
      .onConflict((oc) =>
        oc.columns(["kind", "id"]).doUpdateSet({
          restaurant_id: sql.ref("excluded.restaurant_id"),
          reason: sql.ref("excluded.reason"),
          detail: sql.ref("excluded.detail"),
          raw: sql.ref("excluded.raw"),
          last_seen: sql`clock_timestamp()`,
          count: sql`rejected_records.count + 1`,
        }),
      )
      .execute();
  }
}

/** Forgets the rejections of records that read clean this time. */
export async function clearRejections(tx: Transaction<DatabaseSchema>, kind: MirrorKind, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await tx
    .deleteFrom("rejected_records")
    .where("kind", "=", kind)
    .where(sql<boolean>`id = any(${ids}::text[])`)
    .execute();
}

export async function listRejections(db: Kysely<DatabaseSchema>, kind?: MirrorKind): Promise<RejectionRow[]> {
  let query = db.selectFrom("rejected_records").selectAll().orderBy("kind").orderBy("id");
  if (kind !== undefined) query = query.where("kind", "=", kind);
  const rows = await query.execute();
  return rows.map((r) => ({
    kind: r.kind as MirrorKind,
    id: r.id,
    restaurantId: r.restaurant_id,
    reason: r.reason,
    detail: r.detail,
    raw: r.raw,
    firstSeen: r.first_seen,
    lastSeen: r.last_seen,
    count: r.count,
  }));
}
