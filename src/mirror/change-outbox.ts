import { randomUUID } from "node:crypto";
import type { Kysely, Transaction } from "kysely";
import type { ChangeData, ChangeEvent, ChangeKind, ChangeSource } from "../events/change-events.js";
import type { DatabaseSchema } from "./database-schema.js";
import type { MirrorChange, MirrorKind } from "./store.js";
import { expectDefined } from "../expect-defined.js";

/** The change kind of each mirror kind that produces change events (reviews are stored as delivered: none). */
const CHANGE_KIND_OF = { orders: "order", bookings: "booking", "menu-items": "menu_item" } as const satisfies Partial<
  Record<MirrorKind, ChangeKind>
>;

/** A change as recorded in the outbox, with its id and the source it was attributed to. */
export type RecordedChange = ChangeEvent;

/** A fresh change id: `chg_` and 32 hex digits (a valid BullMQ job id: no `:`, not all digits). */
export const newChangeId = () => `chg_${randomUUID().replace(/-/g, "")}`;

/**
 * Inserts one outbox row per change, inside the mirror write's transaction (`tx`): the change
 * exists iff the write committed. Returns the change events as recorded (kinds without change
 * events are skipped). `sourceOf` attributes each change (webhook, reconcile or backfill).
 * `traceparent`: the trace context of the write (tracing on only), stored for the relay.
 */
export async function insertChanges(
  tx: Transaction<DatabaseSchema>,
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
    recorded.push({ id: newChangeId(), type: `change.${kind}`, createdAt: "", data });
  }
  if (recorded.length === 0) return recorded;
  // In write order (the changes come in id order within one write): seq follows the array.
  const rows = await tx
    .insertInto("change_outbox")
    .values(recorded.map((c) => ({ id: c.id, type: c.type, payload: JSON.stringify(c.data), traceparent: traceparent ?? null })))
    .returning(["id", "created_at"])
    .execute();
  const at = new Map(rows.map((r) => [r.id, new Date(r.created_at).toISOString()]));
  for (const c of recorded) c.createdAt = expectDefined(at.get(c.id), `the outbox returned no row for change ${c.id}`);
  return recorded;
}

export interface OutboxRow {
  seq: string;
  id: string;
  type: string;
  payload: Record<string, unknown>;
  createdAt: string;
  /** The trace context of the write that recorded the change, when tracing was on. */
  traceparent?: string;
}

export interface ChangeOutbox {
  /**
   * Reads up to `limit` of the oldest rows, hands them to `send`, then deletes them: rows whose
   * `send` failed stay for the next try. No transaction or lock is held while `send` runs (it
   * waits on Redis, and the embedded store has one connection that every database user shares).
   * Two takers at once send the oldest rows left, in `seq` order, so a row reaches the queue
   * before any later one; one they both send is added once (its job and deduplication id are the
   * change id). Returns how many rows were sent.
   */
  relayBatch(limit: number, send: (rows: OutboxRow[]) => Promise<void>): Promise<number>;
  /** Rows waiting (tests, metrics). */
  pending(): Promise<number>;
}

export function createChangeOutbox(db: Kysely<DatabaseSchema>): ChangeOutbox {
  return {
    async relayBatch(limit, send) {
      const rows = await db
        .selectFrom("change_outbox")
        .select(["seq", "id", "type", "payload", "created_at", "traceparent"])
        .orderBy("seq")
        .limit(limit)
        .execute();
      if (rows.length === 0) return 0;
      await send(
        rows.map((r) => ({
          seq: r.seq,
          id: r.id,
          type: r.type,
          payload: r.payload,
          createdAt: new Date(r.created_at).toISOString(),
          ...(r.traceparent === null ? {} : { traceparent: r.traceparent }),
        })),
      );
      await db
        .deleteFrom("change_outbox")
        .where(
          "seq",
          "in",
          rows.map((r) => r.seq),
        )
        .execute();
      return rows.length;
    },
    async pending() {
      const row = await db
        .selectFrom("change_outbox")
        .select((eb) => eb.fn.countAll<string>().as("n"))
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
  };
}
