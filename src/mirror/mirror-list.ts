import { sql, type Kysely } from "kysely";
import { expectDefined } from "../expect-defined.js";
import type { DatabaseSchema } from "./database-schema.js";
import { encodeCursor, RANGE_FIELD, validateFilter } from "./mirror-filter.js";
import { TABLE_OF } from "./mirror-rows.js";
import type { MirrorKind, MirrorListFilter, MirrorPage, MirrorRecord } from "./store.js";

/**
 * JSON bytes of records in one page at most (GET /mirror/{kind}): a page stops adding records
 * before it would pass this, so three 5 MB orders come one a page, not 15 MB at once. A record
 * larger than the budget alone is still answered whole, alone on its page.
 */
export const MIRROR_PAGE_BYTES = 1024 * 1024;

/** A date-only bound means midnight UTC, whatever the session's TimeZone. */
const utc = (bound: string) => (bound.length === 10 ? `${bound}T00:00:00Z` : bound);

/**
 * One page of a kind in id order, bounded by `limit` and by `budget` bytes (at least one record):
 * the ids and sizes are read first, then the records that fit, so an oversized page is never
 * read whole. `nextCursor` continues after the last record answered.
 */
export async function listMirrorPage(
  db: Kysely<Pick<DatabaseSchema, "orders" | "order_items">>,
  kind: MirrorKind,
  filter: MirrorListFilter | undefined,
  budget = MIRROR_PAGE_BYTES,
): Promise<MirrorPage> {
  const f = validateFilter(kind, filter);
  // The four mirror tables share the columns used here: typed as `orders`, run on the kind's table.
  const table = TABLE_OF[kind] as "orders";
  let query = db
    .selectFrom(table)
    .select(["id", sql<number | string>`octet_length(raw::text)`.as("bytes")])
    .orderBy("id")
    .limit(f.limit + 1);
  if (f.restaurantId !== undefined) query = query.where("restaurant_id", "=", f.restaurantId);
  if (f.status !== undefined) query = query.where("status", "=", f.status);
  // Half-open ranges: from inclusive, to exclusive (pages of days compose without overlap).
  const range = RANGE_FIELD[kind];
  if (range && f.from !== undefined) query = query.where(sql.ref(range.column), ">=", range.column === "created_at" ? utc(f.from) : f.from);
  if (range && f.to !== undefined) query = query.where(sql.ref(range.column), "<", range.column === "created_at" ? utc(f.to) : f.to);
  if (f.after !== undefined) query = query.where("id", ">", f.after);
  const sizes = await query.execute();

  const ids: string[] = [];
  let bytes = 0;
  for (const row of sizes.slice(0, f.limit)) {
    if (ids.length > 0 && bytes + Number(row.bytes) > budget) break;
    ids.push(row.id);
    bytes += Number(row.bytes);
  }
  const rows = ids.length === 0 ? [] : await db.selectFrom(table).select(["id", "raw"]).where("id", "in", ids).orderBy("id").execute();
  const more = sizes.length > ids.length;
  return {
    data: rows.map((r) => r.raw as MirrorRecord),
    nextCursor: more ? encodeCursor(expectDefined(ids.at(-1), "a page with more after it has a last id")) : null,
  };
}
