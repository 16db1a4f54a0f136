import { sql, type Kysely, type Selectable } from "kysely";
import { isDeepStrictEqual } from "node:util";
import { summarizeHandlers, decodeEventCursor, encodeEventCursor, logOrder, pastPosition, type LogPosition } from "./event-log.js";
import { validateRecordId, type MirrorRecord, fittingRows } from "./mirror-store.js";
import { type DatabaseSchema, type EventStatus, type HandlerOutcome } from "./database.js";
import { DEFAULT_ACCOUNT } from "../config/defaults.js";
import { fromStoredPayload } from "./values.js";
import { MIRROR_KINDS, tableOf, type MirrorKind } from "./kinds.js";
import { withOperatorTimeout } from "./errors.js";
import { CHANGE_KINDS, CHANGE_TYPE_PREFIX, changeEventType, type ChangeSource } from "../events/catalog.js";

/** Timeline entries per page at most (newest first; `nextCursor` goes on). */
export const TIMELINE_LIMIT = 200;

/** One event of the log that named the record: a delivery from the upstream, or a change the mirror recorded. */
interface TimelineEntry {
  entry: "delivery" | "change";
  eventId: string;
  type: string;
  /** When the log first received it (the database's clock). */
  at: Date;
  status: EventStatus;
  attempts: number;
  /** Each handler's latest outcome (error cut short; the event's page has it whole). */
  handlers: Record<string, HandlerOutcome>;
  /** Changes only: which kind of read wrote it (webhook, reconcile, backfill). */
  source?: string;
  /** Changes only: the changed fields, before and after. */
  diff?: FieldDiff[];
  /** Changes only: the change created the record (nothing before it); `diff` then holds its non-null fields. */
  created?: boolean;
  /**
   * Changes only, false when no handler received the change: it is its record's history, never an
   * event (no attempts, no handlers). A first import's such record is one entry, `created` with an
   * empty `diff` ("imported"): the mirror holds the record itself.
   */
  event?: boolean;
}

/** Everything the service holds about one record: the mirror's copy and what the log says of it. */
export interface RecordStory {
  kind: MirrorKind;
  id: string;
  /** The mirror's copy; null when the mirror does not hold it (never read, or refused). */
  record: {
    data: MirrorRecord;
    /** The database's clock taken before the upstream read that produced this copy. */
    readAt: Date;
    /** When the row was last written (a read that changed it, or confirmed it later). */
    syncedAt: Date;
    /**
     * The newest change the log holds for it: the read that last changed the copy and its source.
     * A read that found nothing new leaves only `readAt` (the mirror keeps no source per read).
     */
    lastChange: { eventId: string; at: Date; source: string } | null;
  } | null;
  /** The restaurant it belongs to: the mirror's copy, else the newest event that named it. */
  restaurantId: string | null;
  /** Set when the mirror refused the record as read (rejected_records). */
  rejected: { reason: string; detail: string; lastSeen: Date; count: number } | null;
  /** Set when a refresh gave up looking for it in the API's lists (unlisted_records). */
  unlisted: { eventIds: string[]; givenUpAt: Date; attempts: number } | null;
  /** Newest first, at most TIMELINE_LIMIT. */
  timeline: TimelineEntry[];
  /** Pass as `cursor` for older entries; null when there are none. */
  nextCursor: string | null;
}

/** `type like` this: the change events (`change.*`), a literal in the statement as the pattern always was. */
const CHANGE_TYPES = sql.lit(`${CHANGE_TYPE_PREFIX}%`);

type TimelineRow = Pick<Selectable<DatabaseSchema["events"]>, "id" | "type" | "received_at" | "status" | "attempts" | "handlers"> & {
  restaurant_id: string | null;
  /** A change event's payload bytes (its diff's source); 0 for a delivery. */
  change_bytes: number | string;
  /** False for a change no handler received (record_changes): history, not an event. */
  logged: boolean;
};

function toEntry(row: TimelineRow, change: unknown): TimelineEntry {
  const { type, status, attempts } = row;
  const base = { eventId: row.id, type, at: new Date(row.received_at), status, attempts, handlers: summarizeHandlers(row.handlers) };
  if (Number(row.change_bytes) === 0) return { entry: "delivery", ...base };
  const data = changeData(change);
  const asFields = (v: unknown) => (typeof v === "object" && v !== null ? (v as Record<string, unknown>) : null);
  const changed = Array.isArray(data.changed) ? data.changed.map(String) : undefined;
  const before = asFields(data.before);
  const diff = fieldDiff(before, asFields(data.after), changed);
  return { entry: "change", ...base, source: textOf(data.source), diff, created: before === null, ...(row.logged ? {} : { event: false }) };
}

/** One record of one account, as every read of its story names it. */
interface RecordRef {
  account: string;
  kind: MirrorKind;
  id: string;
}

/**
 * What the log and the history hold of a record, as one list in the log's order: the events naming
 * it (deliveries and change events) and the changes no handler received (record_changes, shaped as
 * handled events with no attempts).
 */
function storyRows({ account, kind, id }: RecordRef) {
  // Only the size of change events' payloads here (their diffs): a change of a 5 MB order holds
  // it twice. The page then reads the payloads of the ones that fit (changePayloads).
  return sql`(select id, type, received_at, status, attempts, handlers,
        payload -> 'data' ->> 'restaurantId' as restaurant_id,
        case when type like ${CHANGE_TYPES} then octet_length(payload::text) else 0 end as change_bytes, true as logged
      from events where account_id = ${account} and record_id = ${id} and record_kind = ${kind}
    union all
    select id, type, created_at as received_at, 'handled' as status, 0 as attempts, '{}'::jsonb as handlers,
        payload ->> 'restaurantId' as restaurant_id, octet_length(payload::text) as change_bytes, false as logged
      from record_changes where account_id = ${account} and record_id = ${id} and record_kind = ${kind}) as story`;
}

/** The story's entries newest first, from `after` on (exclusive), `limit` + 1 rows to tell whether more follow. */
function timelineRows(db: Kysely<DatabaseSchema>, ref: RecordRef, after: LogPosition | undefined) {
  const older = after ? sql`where ${pastPosition(after, true)}` : sql``;
  return sql<TimelineRow>`select * from ${storyRows(ref)} ${older}
    ${logOrder({ newestFirst: true })} limit ${TIMELINE_LIMIT + 1}`.execute(db);
}

async function changePayloads(db: Kysely<DatabaseSchema>, account: string, rows: readonly TimelineRow[]): Promise<Map<string, unknown>> {
  const ids = (logged: boolean) => rows.filter((r) => Number(r.change_bytes) > 0 && r.logged === logged).map((r) => r.id);
  const [events, history] = [ids(true), ids(false)];
  if (events.length === 0 && history.length === 0) return new Map();
  // One read of both: an event's payload holds the change's data under `data`, a history row holds the data itself.
  const found = await sql<{ id: string; payload: unknown }>`
    select id, payload from events where account_id = ${account} and id = any(${events}::text[])
    union all
    select id, jsonb_build_object('data', payload) from record_changes where account_id = ${account} and id = any(${history}::text[])`.execute(
    db,
  );
  return new Map(found.rows.map((r) => [r.id, r.payload]));
}

async function mirrorCopy(db: Kysely<DatabaseSchema>, { account, kind, id }: RecordRef) {
  return db
    .selectFrom(tableOf(kind))
    .select(["raw", "read_at", "synced_at", "restaurant_id"])
    .where("account_id", "=", account)
    .where("id", "=", id)
    .executeTakeFirst();
}

async function lastChange(db: Kysely<DatabaseSchema>, { account, kind, id }: RecordRef) {
  const { rows } = await sql<{ id: string; received_at: Date; source: string | null }>`select * from (
      (select id, received_at, payload -> 'data' ->> 'source' as source
        from events where account_id = ${account} and record_id = ${id} and record_kind = ${kind} and type like ${CHANGE_TYPES}
        ${logOrder({ newestFirst: true })} limit 1)
      union all
      (select id, created_at as received_at, payload ->> 'source' as source
        from record_changes where account_id = ${account} and record_id = ${id} and record_kind = ${kind}
        order by created_at desc, id desc limit 1)) as last
    ${logOrder({ newestFirst: true })} limit 1`.execute(db);
  const row = rows[0];
  return row ? { eventId: row.id, at: new Date(row.received_at), source: row.source ?? "" } : null;
}

async function sideTables(db: Kysely<DatabaseSchema>, { account, kind, id }: RecordRef) {
  const where = sql`where account_id = ${account} and kind = ${kind} and id = ${id}`;
  const { rows: rejected } = await sql<NonNullable<RecordStory["rejected"]>>`
    select reason, detail, last_seen as "lastSeen", count from rejected_records ${where}`.execute(db);
  const { rows: unlisted } = await sql<NonNullable<RecordStory["unlisted"]>>`
    select event_ids as "eventIds", given_up_at as "givenUpAt", attempts from unlisted_records ${where}`.execute(db);
  return { rejected: rejected[0] ?? null, unlisted: unlisted[0] ?? null };
}

/**
 * A record's story: the mirror's copy with when (and, when it changed, by which read) it was last
 * read, and every event the log holds that named it (deliveries and change events, with each
 * change's field diff), newest first, a page of TIMELINE_LIMIT. Undefined when the service holds
 * nothing of it. Index lookups only (events_record_idx, the tables' keys); an operator read.
 */
export async function readRecordStory(
  db: Kysely<DatabaseSchema>,
  kind: MirrorKind,
  id: string,
  /** `account`: whose record (default DEFAULT_ACCOUNT). */
  options: { cursor?: string | undefined; timeoutMs: number; account?: string | undefined },
): Promise<RecordStory | undefined> {
  validateRecordId(id);
  const after = options.cursor === undefined ? undefined : decodeEventCursor(options.cursor);
  const ref: RecordRef = { account: options.account ?? DEFAULT_ACCOUNT, kind, id };
  return withOperatorTimeout(options.timeoutMs, async () => {
    const copy = await mirrorCopy(db, ref);
    const { rows } = await timelineRows(db, ref, after);
    const { rejected, unlisted } = await sideTables(db, ref);
    if (!copy && rows.length === 0 && !rejected && !unlisted && after === undefined) return undefined;
    // The rows of one page: at most TIMELINE_LIMIT, and change payloads of at most MIRROR_PAGE_BYTES (at least one row).
    const page = fittingRows(rows.slice(0, TIMELINE_LIMIT), (row) => Number(row.change_bytes));
    const changes = await changePayloads(db, ref.account, page);
    const last = page.at(-1);
    return {
      kind,
      id,
      record: copy
        ? {
            data: copy.raw as MirrorRecord,
            readAt: new Date(copy.read_at),
            syncedAt: new Date(copy.synced_at),
            lastChange: await lastChange(db, ref),
          }
        : null,
      restaurantId: copy?.restaurant_id ?? rows.find((r) => r.restaurant_id !== null)?.restaurant_id ?? null,
      rejected,
      unlisted,
      timeline: page.map((row) => toEntry(row, changes.get(row.id))),
      nextCursor: rows.length > page.length && last ? encodeEventCursor(new Date(last.received_at), last.id) : null,
    };
  });
}

/**
 * Where an id lives, for the console's search: the mirror kinds holding it, else the kinds of the
 * events that named it (a record the mirror never stored). Empty when neither knows it.
 */
export async function findRecordKinds(
  db: Kysely<DatabaseSchema>,
  id: string,
  timeoutMs: number,
  account = DEFAULT_ACCOUNT,
): Promise<MirrorKind[]> {
  validateRecordId(id);
  return withOperatorTimeout(timeoutMs, async () => {
    const held: MirrorKind[] = [];
    for (const kind of MIRROR_KINDS) if (await mirrorCopy(db, { account, kind, id })) held.push(kind);
    if (held.length > 0) return held;
    const { rows } = await sql<{ kind: string }>`select distinct record_kind as kind from events
      where account_id = ${account} and record_id = ${id}`.execute(db);
    return MIRROR_KINDS.filter((k) => rows.some((r) => r.kind === k));
  });
}

/** A change the mirror recorded: a change event (`change.*`) of the log, or its record's history when no handler received it. */
export interface CausedChange {
  /** The change id (`chg_…`), itself an event of the log. */
  id: string;
  type: string;
  receivedAt: Date;
  kind: string;
  recordId: string;
  before: unknown;
  after: unknown;
  changed: string[];
  source: string;
  /** False for a change no handler received (record_changes): its record's history, no event of the log. */
  event: boolean;
}

/** How many changes an event page shows at most. */
const MAX_CAUSED_CHANGES = 20;

/**
 * The change events that followed an event: the relay puts each mirror change into the events
 * queue as a `change.<kind>` event, so the log holds it; those for the record the event named
 * (`data.id` of an order.*, booking.* or menu_item.* event) received at or after the event itself,
 * oldest first. A link by record and time, not by cause: a change another event or a sweep made
 * to the same record after this one is listed too (its `source` says which kind of read made it).
 */
export async function listCausedChanges(
  db: Kysely<DatabaseSchema>,
  event: { type: string; payload: unknown; receivedAt: Date },
  timeoutMs: number,
  account = DEFAULT_ACCOUNT,
): Promise<CausedChange[]> {
  // The change kinds are the event families that name their record in `data.id` (change.<kind> its event type).
  const family = event.type.split(".")[0] ?? "";
  const kind = CHANGE_KINDS.find((k) => k === family);
  const recordId = namedRecordId(event.payload);
  if (kind === undefined || recordId === undefined) return [];
  const rows = await withOperatorTimeout(timeoutMs, async () => {
    const logged = await db
      .selectFrom("events")
      .select(["id", "type", "received_at", "payload"])
      .where("account_id", "=", account)
      .where("type", "=", changeEventType(kind))
      .where("received_at", ">=", event.receivedAt)
      .where(sql<boolean>`payload -> 'data' ->> 'id' = ${recordId}`)
      .orderBy("received_at")
      .orderBy("id")
      .limit(MAX_CAUSED_CHANGES)
      .execute();
    // The changes no handler received: its record's history (a row holds the change's data).
    const history = await db
      .selectFrom("record_changes")
      .select(["id", "type", "created_at as received_at", "payload"])
      .where("account_id", "=", account)
      .where("record_id", "=", recordId)
      .where("type", "=", changeEventType(kind))
      .where("created_at", ">=", event.receivedAt)
      .orderBy("created_at")
      .orderBy("id")
      .limit(MAX_CAUSED_CHANGES)
      .execute();
    const byTime = (a: { received_at: Date; id: string }, b: { received_at: Date; id: string }) =>
      a.received_at.getTime() - b.received_at.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
    return [...logged.map((r) => ({ ...r, logged: true })), ...history.map((r) => ({ ...r, payload: { data: r.payload }, logged: false }))]
      .sort(byTime)
      .slice(0, MAX_CAUSED_CHANGES);
  });
  return rows.map(toCausedChange);
}

/** How many changes the list of changes by source shows at most (newest first). */
export const CHANGE_LIST_LIMIT = 100;

/**
 * The account's changes of one source since a moment, newest first, at most CHANGE_LIST_LIMIT:
 * the change events of the log and the changes no handler received (record_changes) alike. With
 * `reconcile`, the changes a sweep found that no webhook announced: what the health page's
 * "missed webhooks" counts (a first import's are `backfill`, never counted there).
 */
export async function listChangesBySource(
  db: Kysely<DatabaseSchema>,
  query: { source: ChangeSource; since: Date; account?: string | undefined },
  timeoutMs: number,
): Promise<CausedChange[]> {
  const account = query.account ?? DEFAULT_ACCOUNT;
  const { rows } = await withOperatorTimeout(timeoutMs, () =>
    sql<ChangeRow>`select * from (
      (select id, type, received_at, payload, true as logged from events
        where account_id = ${account} and type like ${CHANGE_TYPES} and received_at >= ${query.since}
          and payload -> 'data' ->> 'source' = ${query.source}
        ${logOrder({ newestFirst: true })} limit ${CHANGE_LIST_LIMIT})
      union all
      (select id, type, created_at as received_at, jsonb_build_object('data', payload) as payload, false as logged from record_changes
        where account_id = ${account} and created_at >= ${query.since} and payload ->> 'source' = ${query.source}
        order by created_at desc, id desc limit ${CHANGE_LIST_LIMIT})) as changes
    ${logOrder({ newestFirst: true })} limit ${CHANGE_LIST_LIMIT}`.execute(db),
  );
  return rows.map(toCausedChange);
}

/** A change as the log or the history holds it, its data under `payload.data`. */
interface ChangeRow {
  id: string;
  type: string;
  received_at: Date;
  payload: unknown;
  logged: boolean;
}

function toCausedChange(row: ChangeRow): CausedChange {
  const data = changeData(row.payload);
  return {
    id: row.id,
    type: row.type,
    receivedAt: new Date(row.received_at),
    kind: textOf(data.kind),
    recordId: textOf(data.id),
    before: data.before ?? null,
    after: data.after ?? null,
    changed: Array.isArray(data.changed) ? data.changed.map(String) : [],
    source: textOf(data.source),
    event: row.logged,
  };
}

const textOf = (value: unknown): string => (typeof value === "string" ? value : "");

/** The `data` of a change event's stored payload (empty when it has none). */
const changeData = (payload: unknown) => (fromStoredPayload(payload) as { data?: Record<string, unknown> } | null)?.data ?? {};

/** `data.id` of an event's payload when it is a non-empty string. */
function namedRecordId(payload: unknown): string | undefined {
  const data = (payload as { data?: unknown } | null)?.data;
  const id = (data as { id?: unknown } | null | undefined)?.id;
  return typeof id === "string" && id !== "" ? id : undefined;
}

/** One top-level field a change changed: its value before (null when the record was new) and after. */
export interface FieldDiff {
  field: string;
  before: unknown;
  after: unknown;
}

type Fields = Record<string, unknown> | null | undefined;

/**
 * The fields of a change, one entry each, in field order: those `changed` names (a change event
 * carries the list), or, when it does not, every top-level field whose values differ. A field
 * absent on one side reads as null there. A creation (no `before`) lists the new record's fields
 * that hold a value: a field created empty did not change from anything. Pure: a page shows what
 * changed, not two whole documents.
 */
export function fieldDiff(before: Fields, after: Fields, changed?: readonly string[]): FieldDiff[] {
  const fields =
    changed ??
    [...new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})])].filter((f) => !isDeepStrictEqual(before?.[f], after?.[f]));
  const diff = [...fields].sort().map((field) => ({ field, before: before?.[field] ?? null, after: after?.[field] ?? null }));
  return before === null || before === undefined ? diff.filter((d) => d.after !== null) : diff;
}
