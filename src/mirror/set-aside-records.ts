import { createHash } from "node:crypto";
import { sql, type Kysely, type Transaction } from "kysely";
import { fromExcluded, type DatabaseSchema } from "./database.js";
import { fitsKey, storableText, type UnstorableReason } from "./values.js";
import { type MirrorKind } from "./kinds.js";
import { cutAt, MAX_ID_LENGTH, MAX_RECORD_ID_LENGTH } from "../base/text.js";
import type { Logger } from "pino";

// The rejected records table (migrations.ts, 0004_rejected_records): what the mirror could not
// hold, one row per (account, kind, id), written in the upsert's own transaction and cleared there when the
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
function rejectionKey(id: string): string {
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
    restaurantId: typeof restaurantId === "string" ? storableText(restaurantId, MAX_RECORD_ID_LENGTH) : null,
    // JSON.stringify escapes NUL and lone surrogates (well-formed stringify), so this is storable text.
    // `?? null`: JSON.stringify(undefined) is no string (typed callers cannot pass one; JavaScript can).
    raw: JSON.stringify(record ?? null),
  };
}

/** Records (or re-counts) refused records; call under the write's advisory locks, in key order. */
export async function recordRejections(
  tx: Transaction<DatabaseSchema>,
  account: string,
  kind: MirrorKind,
  rejections: readonly Rejection[],
): Promise<void> {
  const sorted = [...rejections].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  for (let i = 0; i < sorted.length; i += CHUNK) {
    await tx
      .insertInto("rejected_records")
      .values(
        sorted.slice(i, i + CHUNK).map((r) => ({
          account_id: account,
          kind,
          id: r.key,
          restaurant_id: r.restaurantId,
          reason: r.reason,
          detail: r.message,
          raw: r.raw,
        })),
      )
      .onConflict((oc) =>
        oc.columns(["account_id", "kind", "id"]).doUpdateSet({
          ...fromExcluded(["restaurant_id", "reason", "detail", "raw"]),
          last_seen: sql`clock_timestamp()`,
          count: sql`rejected_records.count + 1`,
        }),
      )
      .execute();
  }
}

/**
 * Forgets ids a write just stored, inside the upsert's transaction: the rejections of records that
 * read clean this time, or ids once reported as never listed that are listed after all.
 */
export async function clearSetAside(
  tx: Transaction<DatabaseSchema>,
  table: "rejected_records" | "unlisted_records",
  account: string,
  kind: MirrorKind,
  ids: readonly string[],
): Promise<void> {
  if (ids.length === 0) return;
  await tx
    .deleteFrom(table)
    .where("account_id", "=", account)
    .where("kind", "=", kind)
    .where(sql<boolean>`id = any(${ids}::text[])`)
    .execute();
}

/** `and kind = …` when a list asks for one kind. */
const ofKind = (kind: MirrorKind | undefined) => (kind === undefined ? sql`` : sql`and kind = ${kind}`);

/** An account's rejected records (of a kind, or all), by kind and id. */
export async function listRejections(db: Kysely<DatabaseSchema>, account: string, kind?: MirrorKind): Promise<RejectionRow[]> {
  const { rows } = await sql<RejectionRow>`
    select kind, id, restaurant_id as "restaurantId", reason, detail, raw, first_seen as "firstSeen", last_seen as "lastSeen", count
    from rejected_records where account_id = ${account} ${ofKind(kind)} order by kind, id`.execute(db);
  return rows;
}

/** One record an upsert set aside. Nothing here holds the record's values, so it is safe to log. */
export interface RejectedRecord {
  kind: MirrorKind;
  /** undefined when the record had no usable id (then it is reported, but not kept in the table). */
  id: string | undefined;
  /** A stable code for metrics and alerts. */
  reason: UnstorableReason;
  /** The field's path (`diner.name`, `items[0].price`). */
  field: string;
  /** The sentence naming the field and what it must be. */
  message: string;
}

/** A rejected record as the mirror keeps it (until the record reads clean again). */
export interface RejectionRow {
  kind: MirrorKind;
  id: string;
  restaurantId: string | null;
  reason: string;
  detail: string;
  /** The record as read: JSON text, NUL and lone surrogates escaped. */
  raw: string;
  firstSeen: Date;
  lastSeen: Date;
  /** Reads that found it refused. */
  count: number;
}

/** An id an event named that the API did not list within the give-up time: reported, never dropped silently. */
export interface UnlistedRecord {
  kind: MirrorKind;
  id: string;
  restaurantId: string;
  /** The first events that named it (at most 20). */
  eventIds: string[];
  firstNotedAt: Date;
  /** Set by the store when the row is written (ignored on write). */
  givenUpAt?: Date;
  /** Refresh rounds that looked for it. */
  attempts: number;
}

/** A record the API client already found out of shape (ApiClient's `refused`): kept with the rejected. */
export interface RefusedUpstreamRecord {
  record: unknown;
  field: string;
  message: string;
}

// The unlisted records table (migrations.ts, 0009_unlisted_records): ids events named that the API
// never listed within the give-up time, reported by the refresh, forgotten once the record is written.

/** Records (or records again) an id a refresh gave up on. Ids and event ids are kept as storable text. */
export async function recordUnlisted(db: Kysely<DatabaseSchema>, account: string, row: UnlistedRecord): Promise<void> {
  const values = {
    account_id: account,
    kind: row.kind,
    id: storableText(row.id, MAX_RECORD_ID_LENGTH),
    restaurant_id: storableText(row.restaurantId, MAX_RECORD_ID_LENGTH),
    event_ids: row.eventIds.map((e) => storableText(e, MAX_ID_LENGTH)),
    first_noted_at: row.firstNotedAt,
    attempts: row.attempts,
  };
  await db
    .insertInto("unlisted_records")
    .values(values)
    .onConflict((oc) =>
      oc.columns(["account_id", "kind", "id"]).doUpdateSet({
        ...fromExcluded(["restaurant_id", "event_ids", "first_noted_at", "attempts"]),
        given_up_at: sql`clock_timestamp()`,
      }),
    )
    .execute();
}

/** An account's ids given up on (of a kind, or all), by kind and id. */
export async function listUnlisted(db: Kysely<DatabaseSchema>, account: string, kind?: MirrorKind): Promise<UnlistedRecord[]> {
  const { rows } = await sql<UnlistedRecord>`
    select kind, id, restaurant_id as "restaurantId", event_ids as "eventIds", first_noted_at as "firstNotedAt",
      given_up_at as "givenUpAt", attempts
    from unlisted_records where account_id = ${account} ${ofKind(kind)} order by kind, id`.execute(db);
  return rows;
}

/** The counter the reporter bumps (metrics.mirrorRejected); labels are bounded: kind and reason code. */
export interface RejectionCounter {
  inc(labels: { kind: string; reason: string }): void;
}

/**
 * What the mirror's `onRejected` does in the service: one warning per refused record per read,
 * naming its id (shortened), field and reason, never its values (a 1 MB field stays out of the
 * log), and one count per record by kind and reason.
 */
export function createRejectionReporter(deps: { logger: Logger; counter?: RejectionCounter }) {
  return function reportRejected(rejected: readonly RejectedRecord[]): void {
    for (const r of rejected) {
      deps.counter?.inc({ kind: r.kind, reason: r.reason });
      deps.logger.warn(
        {
          kind: r.kind,
          id: r.id === undefined ? null : storableText(r.id, 200),
          reason: r.reason,
          field: storableText(r.field, 200),
          detail: r.message,
        },
        "mirror refused a record: set aside in rejected_records, the rest of its page was written",
      );
    }
  };
}
