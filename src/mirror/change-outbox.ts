import { randomUUID } from "node:crypto";
import type { Kysely, Transaction } from "kysely";
import type { MirrorChange, MirrorRecord, MirrorStore, UpsertResult } from "./mirror-store.js";
import { changeEventType, type ChangeData, type ChangeEvent, type ChangeKind, type ChangeSource } from "../events/catalog.js";
import { type DatabaseSchema } from "./database.js";
import { DEFAULT_ACCOUNT } from "../config/defaults.js";
import { type MirrorKind } from "./values.js";
import type { RefusedUpstreamRecord } from "./set-aside-records.js";
import { expectDefined } from "../errors.js";

/** The change kind of each mirror kind that produces change events (reviews are stored as delivered: none). */
const CHANGE_KIND_OF = { orders: "order", bookings: "booking", "menu-items": "menu_item" } as const satisfies Partial<
  Record<MirrorKind, ChangeKind>
>;

/** The mirror kind whose records a change kind's changes are of (CHANGE_KIND_OF read backwards): where a change's record page is. */
export const mirrorKindOfChange = (kind: string) =>
  (Object.keys(CHANGE_KIND_OF) as (keyof typeof CHANGE_KIND_OF)[]).find((mirrorKind) => CHANGE_KIND_OF[mirrorKind] === kind);

/** A change as recorded in the outbox, with its id and the source it was attributed to. */
export type RecordedChange = ChangeEvent;

/** A fresh change id: `chg_` and 32 hex digits (a valid BullMQ job id: no `:`, not all digits). */
const newChangeId = () => `chg_${randomUUID().replace(/-/g, "")}`;

/**
 * Inserts one outbox row per change, inside the mirror write's transaction (`tx`): the change
 * exists iff the write committed. Returns the change events as recorded (kinds without change
 * events are skipped). `sourceOf` attributes each change (webhook, reconcile or backfill).
 * `traceparent`: the trace context of the write (tracing on only), stored for the relay.
 */
async function insertChanges(
  tx: Transaction<DatabaseSchema>,
  account: string,
  changes: readonly MirrorChange[],
  sourceOf: (change: MirrorChange) => ChangeSource | Promise<ChangeSource>,
  traceparent?: string,
): Promise<RecordedChange[]> {
  const recorded: RecordedChange[] = [];
  for (const change of changes) {
    const kind = (CHANGE_KIND_OF as Partial<Record<MirrorKind, ChangeKind>>)[change.kind];
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
  }
  if (recorded.length === 0) return recorded;
  // In write order (the changes come in id order within one write): seq follows the array.
  const rows = await tx
    .insertInto("change_outbox")
    .values(
      recorded.map((c) => ({
        account_id: account,
        id: c.id,
        type: c.type,
        payload: JSON.stringify(c.data),
        traceparent: traceparent ?? null,
      })),
    )
    .returning(["id", "created_at"])
    .execute();
  const at = new Map(rows.map((r) => [r.id, new Date(r.created_at).toISOString()]));
  for (const c of recorded) c.createdAt = expectDefined(at.get(c.id), `the outbox returned no row for change ${c.id}`);
  return recorded;
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
 * A writer that records a change event (an outbox row) for every change a write makes, in the
 * write's own transaction, then reports them once committed (`onRecorded`: metrics and a poke to
 * the relay). Without `record` (`backfill --no-changes`), writes produce no change events.
 */
export function createMirrorWriter(
  mirror: MirrorStore,
  options: {
    record?: boolean;
    onRecorded?: (changes: readonly RecordedChange[]) => void;
    /**
     * Given only when tracing is on: the trace context of the write (the refresh, sweep or handler
     * span it runs in), stored with its changes so their events continue that trace.
     */
    traceparent?: () => string | undefined;
  } = {},
): MirrorWriter {
  const record = options.record ?? true;
  return {
    async write(kind, records, readAt, source, refused = []) {
      if (!record) return mirror.upsert(kind, records, readAt, { refused });
      const sourceOf = typeof source === "function" ? source : () => source;
      // Read here, in the caller's span, rather than inside the database's transaction callback.
      const traceparent = options.traceparent?.();
      const recorded: RecordedChange[] = [];
      const result = await mirror.upsert(kind, records, readAt, {
        refused,
        // Once per transaction of the write (a large one is several): each records its own changes.
        onChanges: async (tx, changes) => {
          // The mirror's account: a change is filed under the company whose record changed.
          recorded.push(...(await insertChanges(tx, mirror.account, changes, sourceOf, traceparent)));
        },
      });
      if (recorded.length > 0) options.onRecorded?.(recorded);
      return result;
    },
  };
}
