import type { Kysely } from "kysely";
import type { DatabaseSchema } from "./database-schema.js";
import { TABLE_OF } from "./mirror-rows.js";
import { withOperatorTimeout } from "./operator-query-timeout-error.js";
import type { MirrorKind } from "./store.js";

/** When a mirrored record was last read from the API and last written here (both by the database's clock). */
export interface RecordBookkeeping {
  readAt: Date;
  syncedAt: Date;
}

/**
 * The read and sync times of some records of a kind (a page the console shows), by id: what
 * `MirrorStore.list` leaves out, since API clients want the records as the upstream shapes them.
 */
export async function readBookkeeping(
  db: Kysely<DatabaseSchema>,
  kind: MirrorKind,
  ids: readonly string[],
  timeoutMs: number,
): Promise<Map<string, RecordBookkeeping>> {
  if (ids.length === 0) return new Map();
  const rows = await withOperatorTimeout(timeoutMs, () =>
    db
      .selectFrom(TABLE_OF[kind] as "orders")
      .select(["id", "read_at", "synced_at"])
      .where("id", "in", [...ids])
      .execute(),
  );
  return new Map(rows.map((r) => [r.id, { readAt: new Date(r.read_at), syncedAt: new Date(r.synced_at) }]));
}
