import { sql, type Expression, type Kysely, type Transaction } from "kysely";
import { expectDefined } from "../expect-defined.js";
import type { DatabaseSchema } from "./database-schema.js";
import { listMirrorPage } from "./mirror-list.js";
import { MirrorRecordError } from "./mirror-record-error.js";
import { TABLE_OF, type PreparedRecord } from "./mirror-rows.js";
import { clearRejections, listRejections, recordRejections } from "./rejected-records.js";
import { clearUnlisted, listUnlisted, recordUnlisted } from "./unlisted-records.js";
import type { MirrorChange, MirrorKind, MirrorRecord, MirrorStore, OnMirrorChanges, RejectedRecord, UpsertResult } from "./store.js";
import { chunkWrite, dedupe, prepareAll, type WriteChunk } from "./write-chunks.js";

// Kysely types one table at a time; the mirror's four tables share the columns used here
// (id, restaurant_id, raw, rank, read_at, synced_at), so queries over "any mirror table" are
// written against `orders` and run against the kind's table.
type AnyMirrorDb = Kysely<Pick<DatabaseSchema, "orders" | "order_items">>;

const validDate = (d: unknown): d is Date => d instanceof Date && !Number.isNaN(d.getTime());

/**
 * Transaction-scoped advisory locks on every id a transaction of a write touches (at most
 * IDS_PER_TRANSACTION), taken in one statement in one global order (by lock key), and none taken
 * after: a transaction waits only for a lock that sorts after every lock it holds, so two writes
 * over overlapping ids, however large and in whatever order, queue instead of deadlocking.
 */
async function lockIds(tx: Transaction<DatabaseSchema>, kind: MirrorKind, ids: readonly string[]): Promise<void> {
  await sql`select pg_advisory_xact_lock(k) from (select distinct hashtextextended(${`mirror:${kind}:`} || id, 0) as k from unnest(${ids}::text[]) as id order by k) as locks`.execute(
    tx,
  );
}

/**
 * The stale-write guard, in the upsert itself: the incoming copy replaces the stored one iff
 * (incoming.rank, incoming.read_at) > (stored.rank, stored.read_at), compared lexicographically —
 * further along the state machine wins whatever the read time; at the same rank the later read by
 * the shared clock wins; on an exact tie the stored row stays (so the outcome does not depend on
 * which of two equal writers commits first). A written copy whose content equals the stored one
 * still advances read_at (and synced_at): otherwise an older read, arriving later, could pass the
 * guard against the stale read_at and overwrite data confirmed since. Such a write is not a change.
 */
async function upsertRows(
  tx: Transaction<DatabaseSchema>,
  kind: MirrorKind,
  chunk: PreparedRecord[],
): Promise<{ written: number; changes: MirrorChange[] }> {
  const table = TABLE_OF[kind] as "orders";
  const ids = chunk.map((p) => p.id);
  const db = tx as unknown as AnyMirrorDb;
  // The caller holds the advisory locks of every id (lockIds): writers of the same ids queued
  // there, so this statement's snapshot is taken after the previous writer committed, and the
  // pre-image below is the row this write actually replaces — also when two writers both see a
  // record for the first time.
  const columns = Object.keys(expectDefined(chunk[0], "upsertRows needs a non-empty chunk").row).filter((c) => c !== "id");
  const set: Record<string, Expression<unknown>> = Object.fromEntries([
    ...columns.map((c) => [c, sql.ref(`excluded.${c}`)] as const),
    ["synced_at", sql`clock_timestamp()`] as const,
  ]);
  const rows = await db
    // The pre-image: a plain read, as all parts of the statement share one snapshot (FOR UPDATE
    // here would skip the very rows the insert below updates; the advisory lock already holds them).
    .with("old", (q) => q.selectFrom(table).select(["id", "raw"]).where("id", "in", ids))
    .with("up", (q) =>
      q
        .insertInto(table)
        .values(chunk.map((p) => p.row) as never)
        .onConflict((oc) =>
          oc
            .column("id")
            .doUpdateSet(set as never)
            .where(sql<boolean>`(excluded.rank, excluded.read_at) > (${sql.table(table)}.rank, ${sql.table(table)}.read_at)`),
        )
        .returning(["id", "raw"]),
    )
    .selectFrom("up")
    .leftJoin("old", "old.id", "up.id")
    .select([
      "up.id",
      "up.raw as after",
      sql<boolean>`old.raw is distinct from up.raw`.as("content_changed"),
      "old.raw as before",
      sql<
        string[]
      >`array(select key from jsonb_each(up.raw) as n(key, value) full join jsonb_each(old.raw) as o(key, value) using (key) where n.value is distinct from o.value order by key collate "C")`.as(
        "changed",
      ),
    ])
    .orderBy("up.id")
    .execute();

  // Line items are part of the content: they change only when it does.
  const changes = rows
    .filter((r) => r.content_changed)
    .map((r): MirrorChange => ({
      kind,
      id: r.id,
      before: (r.before as MirrorRecord | null) ?? null,
      after: r.after as MirrorRecord,
      changed: r.changed,
    }));
  if (kind === "orders" && changes.length > 0) {
    const changed = new Set(changes.map((c) => c.id));
    await db
      .deleteFrom("order_items")
      .where("order_id", "in", [...changed])
      .execute();
    const items = chunk.filter((p) => changed.has(p.id)).flatMap((p) => p.items ?? []);
    if (items.length > 0) await db.insertInto("order_items").values(items).execute();
  }
  return { written: rows.length, changes };
}

/**
 * One transaction of a write: the locks of its ids, their rows (and line items), the rejections,
 * and the change events of what it changed (`onChanges`), committed together.
 */
async function writeChunk(
  tx: Transaction<DatabaseSchema>,
  kind: MirrorKind,
  chunk: WriteChunk,
  onChanges: OnMirrorChanges | undefined,
): Promise<{ written: number; changes: MirrorChange[] }> {
  const ids = chunk.prepared.map((p) => p.id);
  await lockIds(tx, kind, [...ids, ...chunk.rejections.map((r) => r.key)]);
  const outcome = chunk.prepared.length > 0 ? await upsertRows(tx, kind, chunk.prepared) : { written: 0, changes: [] };
  await recordRejections(tx, kind, chunk.rejections);
  // A record that reads clean again is no longer rejected (whether or not this copy won the guard).
  await clearRejections(tx, kind, ids);
  // An id once reported as never listed is listed after all.
  await clearUnlisted(tx, kind, ids);
  if (outcome.changes.length > 0 && onChanges) await onChanges(tx, outcome.changes);
  return outcome;
}

/** The mirror in PostgreSQL (server or embedded): see MirrorStore for the guarantees. */
export interface PostgresMirrorOptions {
  /**
   * Told of the records each upsert set aside, after it committed (a log line and a metric:
   * rejection-reporter.ts). Must not throw.
   */
  onRejected?: (rejected: readonly RejectedRecord[]) => void;
}

export function createPostgresMirror(database: Kysely<DatabaseSchema>, mirrorOptions: PostgresMirrorOptions = {}): MirrorStore {
  const db = database as unknown as AnyMirrorDb;
  const tableOf = (kind: MirrorKind) => TABLE_OF[kind] as "orders";

  return {
    async clock() {
      const { now } = await sql<{ now: Date }>`select clock_timestamp() as now`
        .execute(database)
        .then((r) => expectDefined(r.rows[0], "select clock_timestamp() returned no row"));
      return now;
    },

    async upsert(kind, records, readAt, options = {}): Promise<UpsertResult> {
      if (!validDate(readAt))
        throw new MirrorRecordError(kind, undefined, "readAt", "a valid Date from the shared clock (MirrorStore.clock)");
      if (records.length === 0 && !options.refused?.length) return { written: 0, skipped: 0, changes: [], rejected: [] };
      const all = prepareAll(kind, records, readAt, options.refused);
      const result: UpsertResult = { written: 0, skipped: 0, changes: [], rejected: all.rejected };
      // One transaction per chunk: each takes its locks in one statement and holds them only to
      // its own commit, so no write ever waits for a lock while holding others (no deadlock).
      for (const chunk of chunkWrite(dedupe(all.prepared), all.rejections)) {
        const outcome = await database.transaction().execute((tx) => writeChunk(tx, kind, chunk, options.onChanges));
        result.written += outcome.written;
        result.changes.push(...outcome.changes);
      }
      result.skipped = records.length - result.written - all.ofRecords;
      if (result.rejected.length > 0) mirrorOptions.onRejected?.(result.rejected);
      return result;
    },

    async get(kind, id) {
      const row = await db.selectFrom(tableOf(kind)).select("raw").where("id", "=", id).executeTakeFirst();
      return row?.raw as MirrorRecord | undefined;
    },

    list: (kind, filter) => listMirrorPage(db, kind, filter),

    async all(kind) {
      const rows = await db.selectFrom(tableOf(kind)).select("raw").orderBy("id").execute();
      return rows.map((r) => r.raw as MirrorRecord);
    },

    rejections: (kind) => listRejections(database, kind),
    async countOrdersNewer(queries) {
      if (queries.length === 0) return [];
      // One statement for a whole job's ids. Bounded: each count's index walk stops at its `max` rows
      // however deep the record sits.
      const { rows } = await sql<{ i: number; n: string | number }>`
        SELECT q.i, (
          SELECT count(*) FROM (
            SELECT 1 FROM orders o
            WHERE o.created_at > q.since::timestamptz
              AND (q.restaurant_id IS NULL OR o.restaurant_id = q.restaurant_id)
              AND (q.status IS NULL OR o.status = q.status)
            LIMIT q.max
          ) newer
        ) AS n
        FROM unnest(
          ${queries.map((_, i) => i)}::int[],
          ${queries.map((q) => q.since.toISOString())}::text[],
          ${queries.map((q) => q.restaurantId ?? null)}::text[],
          ${queries.map((q) => q.status ?? null)}::text[],
          ${queries.map((q) => q.max)}::int[]
        ) AS q(i, since, restaurant_id, status, max)`.execute(db);
      const counts = queries.map(() => 0);
      for (const row of rows) counts[row.i] = Number(row.n);
      return counts;
    },
    async countBookingsByDay(from, to) {
      const rows = await database
        .selectFrom("bookings")
        .select([sql<string>`to_char(date, 'YYYY-MM-DD')`.as("day"), (eb) => eb.fn.countAll<string | number>().as("n")])
        .where("date", ">=", from)
        .where("date", "<=", to)
        .groupBy("date")
        .execute();
      return new Map(rows.map((r) => [r.day, Number(r.n)]));
    },
    async countBookingsByRestaurantDay(from, to, restaurantIds) {
      const out = new Map<string, Map<string, number>>();
      if (restaurantIds.length === 0) return out;
      const rows = await database
        .selectFrom("bookings")
        .select(["restaurant_id", sql<string>`to_char(date, 'YYYY-MM-DD')`.as("day"), (eb) => eb.fn.countAll<string | number>().as("n")])
        .where("restaurant_id", "in", [...restaurantIds])
        .where("date", ">=", from)
        .where("date", "<=", to)
        .groupBy(["restaurant_id", "date"])
        .execute();
      for (const r of rows) {
        const byDay = out.get(r.restaurant_id) ?? new Map<string, number>();
        byDay.set(r.day, Number(r.n));
        out.set(r.restaurant_id, byDay);
      }
      return out;
    },
    recordUnlisted: (row) => recordUnlisted(database, row),
    unlisted: (kind) => listUnlisted(database, kind),

    async lastWriteAt(kind) {
      const row = await db
        .selectFrom(tableOf(kind))
        .select((eb) => eb.fn.max("synced_at").as("at"))
        .executeTakeFirst();
      return row?.at ? new Date(row.at).getTime() : undefined;
    },
  };
}
