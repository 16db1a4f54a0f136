import { randomUUID } from "node:crypto";
import type { Kysely, Transaction } from "kysely";
import type { MirrorChange, MirrorRecord, MirrorStore, UpsertResult } from "./mirror-store.js";
import { changeEventType, type ChangeData, type ChangeEvent, type ChangeSource } from "../events/catalog.js";
import { type DatabaseSchema } from "./database.js";
import { DEFAULT_ACCOUNT } from "../config/defaults.js";
import { changeKindOf, type MirrorKind } from "./kinds.js";
import type { RefusedUpstreamRecord } from "./set-aside-records.js";
import { expectDefined } from "../errors.js";
import { EVERY_CHANGE, type ListensToChange } from "../events/change-listeners.js";

/** A change as recorded in the outbox, with its id and the source it was attributed to. */
export type RecordedChange = ChangeEvent;

/** A fresh change id: `chg_` and 32 hex digits (a valid BullMQ job id: no `:`, not all digits). */
const newChangeId = () => `chg_${randomUUID().replace(/-/g, "")}`;

/**
 * A change nobody receives, as its record's history keeps it: whole, except a first import's
 * record (source `backfill`, nothing before it), which is one compact "imported" entry (no fields:
 * the mirror holds the record itself).
 */
function historyPayload(data: ChangeData): ChangeData | (Omit<ChangeData, "after"> & { after: null }) {
  if (data.source === "backfill" && data.before === null) return { ...data, after: null, changed: [] };
  return data;
}

/**
 * Records each change inside the mirror write's transaction (`tx`), so it exists iff the write
 * committed: an outbox row (an event: relayed, queued, run and logged) for a change some handler
 * receives (`listens`), else a row of its record's history (`record_changes`), which the
 * record's story reads and nothing runs. Returns the changes as recorded (kinds without change
 * events are skipped), and how many became events. `sourceOf` attributes each change (webhook,
 * reconcile or backfill). `traceparent`: the trace context of the write (tracing on only),
 * stored for the relay.
 */
async function insertChanges(
  tx: Transaction<DatabaseSchema>,
  account: string,
  changes: readonly MirrorChange[],
  sourceOf: (change: MirrorChange) => ChangeSource | Promise<ChangeSource>,
  listens: ListensToChange,
  traceparent?: string,
): Promise<{ recorded: RecordedChange[]; events: number }> {
  const recorded: RecordedChange[] = [];
  const kinds: MirrorKind[] = [];
  for (const change of changes) {
    const kind = changeKindOf(change.kind);
    if (!kind) continue;
    const data: ChangeData = {
      kind,
      id: change.id,
      restaurantId: change.after.restaurantId,
      before: change.before as ChangeData["before"],
      after: change.after as ChangeData["after"],
      changed: change.changed,
      source: await sourceOf(change),
    };
    recorded.push({ id: newChangeId(), type: changeEventType(kind), createdAt: "", data });
    kinds.push(change.kind);
  }
  if (recorded.length === 0) return { recorded, events: 0 };
  const heard = recorded.map((c) => listens(c.type, c.data.source));
  const events = recorded.filter((_, i) => heard[i]);
  const history = recorded.flatMap((c, i) => (heard[i] ? [] : [{ c, kind: expectDefined(kinds[i], "a change without its kind") }]));
  const at = new Map<string, string>();
  // In write order (the changes come in id order within one write): seq follows the array.
  if (events.length > 0) {
    const rows = await tx
      .insertInto("change_outbox")
      .values(
        events.map((c) => ({
          account_id: account,
          id: c.id,
          type: c.type,
          payload: JSON.stringify(c.data),
          traceparent: traceparent ?? null,
        })),
      )
      .returning(["id", "created_at"])
      .execute();
    for (const r of rows) at.set(r.id, new Date(r.created_at).toISOString());
  }
  if (history.length > 0) {
    const rows = await tx
      .insertInto("record_changes")
      .values(
        history.map(({ c, kind }) => ({
          account_id: account,
          id: c.id,
          type: c.type,
          record_kind: kind,
          record_id: c.data.id,
          payload: JSON.stringify(historyPayload(c.data)),
        })),
      )
      .returning(["id", "created_at"])
      .execute();
    for (const r of rows) at.set(r.id, new Date(r.created_at).toISOString());
  }
  for (const c of recorded) c.createdAt = expectDefined(at.get(c.id), `the database returned no row for change ${c.id}`);
  return { recorded, events: events.length };
}

export interface OutboxRow {
  seq: string;
  /** The company whose mirror changed. */
  account: string;
  id: string;
  type: string;
  payload: Record<string, unknown>;
  createdAt: string;
  /** The trace context of the write that recorded the change, when tracing was on. */
  traceparent?: string;
}

export interface ChangeOutbox {
  /** The account (company) whose changes `pending` counts. */
  readonly account: string;
  /**
   * Reads up to `limit` of the oldest rows of every account (one relay serves the deployment),
   * hands them to `send`, then deletes them: rows whose
   * `send` failed stay for the next try. No transaction or lock is held while `send` runs (it
   * waits on Redis, and a connection held across it would be one fewer for every other writer).
   * Two takers at once send the oldest rows left, in `seq` order, so a row reaches the queue
   * before any later one; one they both send is added once (its job and deduplication id are the
   * change id). Returns how many rows were sent.
   */
  relayBatch(limit: number, send: (rows: OutboxRow[]) => Promise<void>): Promise<number>;
  /** Rows waiting (tests, metrics). */
  pending(): Promise<number>;
}

export function createChangeOutbox(
  db: Kysely<DatabaseSchema>,
  /** `account`: the company whose changes these are; default DEFAULT_ACCOUNT. */
  options: { account?: string } = {},
): ChangeOutbox {
  const account = options.account ?? DEFAULT_ACCOUNT;
  return {
    account,
    async relayBatch(limit, send) {
      const rows = await db
        .selectFrom("change_outbox")
        .select(["account_id", "seq", "id", "type", "payload", "created_at", "traceparent"])
        .orderBy("seq")
        .limit(limit)
        .execute();
      if (rows.length === 0) return 0;
      await send(
        rows.map((r) => ({
          seq: r.seq,
          account: r.account_id,
          id: r.id,
          type: r.type,
          payload: r.payload,
          createdAt: new Date(r.created_at).toISOString(),
          ...(r.traceparent === null ? {} : { traceparent: r.traceparent }),
        })),
      );
      const sent = rows.map((r) => r.seq);
      await db.deleteFrom("change_outbox").where("seq", "in", sent).execute();
      return rows.length;
    },
    async pending() {
      const row = await db
        .selectFrom("change_outbox")
        .select((eb) => eb.fn.countAll<string>().as("n"))
        .where("account_id", "=", account)
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
  };
}

/** Who made the mirror read the records: one source for the whole write, or decided per change. */
export type SourceOf = ChangeSource | ((change: MirrorChange) => ChangeSource | Promise<ChangeSource>);

/** How sync code writes the mirror: the upsert plus, in its transaction, the change events it made. */
export interface MirrorWriter {
  /** `refused`: records of the same read the client found out of shape (set aside with the write). */
  write(
    kind: MirrorKind,
    records: readonly MirrorRecord[],
    readAt: Date,
    source: SourceOf,
    refused?: readonly RefusedUpstreamRecord[],
  ): Promise<UpsertResult>;
}

/**
 * A writer that records every change a write makes, in the write's own transaction: a change
 * event (an outbox row) for those a handler receives (`listens`), its record's history for the
 * others (`insertChanges`); then reports them once committed (`onRecorded`: metrics, and a poke
 * to the relay when some became events). Without `record` (`backfill --no-changes`), writes
 * record no changes at all.
 */
export function createMirrorWriter(
  mirror: MirrorStore,
  options: {
    record?: boolean;
    /**
     * Who receives a change (events/change-listeners.ts: derived from the handlers the workers
     * run). @defaultValue EVERY_CHANGE: every change is an event
     */
    listens?: ListensToChange;
    /** Every change recorded, and how many of them became events (outbox rows for the relay). */
    onRecorded?: (changes: readonly RecordedChange[], events: number) => void;
    /**
     * Given only when tracing is on: the trace context of the write (the refresh, sweep or handler
     * span it runs in), stored with its changes so their events continue that trace.
     */
    traceparent?: () => string | undefined;
  } = {},
): MirrorWriter {
  const record = options.record ?? true;
  const listens = options.listens ?? EVERY_CHANGE;
  return {
    async write(kind, records, readAt, source, refused = []) {
      if (!record) return mirror.upsert(kind, records, readAt, { refused });
      const sourceOf = typeof source === "function" ? source : () => source;
      // Read here, in the caller's span, rather than inside the database's transaction callback.
      const traceparent = options.traceparent?.();
      const recorded: RecordedChange[] = [];
      let events = 0;
      const result = await mirror.upsert(kind, records, readAt, {
        refused,
        // Once per transaction of the write (a large one is several): each records its own changes.
        onChanges: async (tx, changes) => {
          // The mirror's account: a change is filed under the company whose record changed.
          const inserted = await insertChanges(tx, mirror.account, changes, sourceOf, listens, traceparent);
          recorded.push(...inserted.recorded);
          events += inserted.events;
        },
      });
      if (recorded.length > 0) options.onRecorded?.(recorded, events);
      return result;
    },
  };
}
