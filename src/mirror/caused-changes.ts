import { sql, type Kysely } from "kysely";
import type { DatabaseSchema } from "./database-schema.js";
import { fromStoredPayload } from "./stored-payload.js";
import { withOperatorTimeout } from "./operator-query-timeout-error.js";

/** A change event (`change.*`) the log recorded for a record an event named. */
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
}

/** The change kind (and change event type) of the records each event family names in `data.id`. */
const CHANGE_TYPE_OF_FAMILY: Readonly<Record<string, string>> = {
  order: "change.order",
  booking: "change.booking",
  menu_item: "change.menu_item",
};

/** How many changes an event page shows at most. */
export const MAX_CAUSED_CHANGES = 20;

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
): Promise<CausedChange[]> {
  const changeType = CHANGE_TYPE_OF_FAMILY[event.type.split(".")[0] ?? ""];
  const recordId = namedRecordId(event.payload);
  if (!changeType || recordId === undefined) return [];
  const rows = await withOperatorTimeout(timeoutMs, () =>
    db
      .selectFrom("events")
      .select(["id", "type", "received_at", "payload"])
      .where("type", "=", changeType)
      .where("received_at", ">=", event.receivedAt)
      .where(sql<boolean>`payload -> 'data' ->> 'id' = ${recordId}`)
      .orderBy("received_at")
      .orderBy("id")
      .limit(MAX_CAUSED_CHANGES)
      .execute(),
  );
  return rows.map((row) => {
    const payload = fromStoredPayload(row.payload) as { data?: Record<string, unknown> } | null;
    const data = payload?.data ?? {};
    return {
      id: row.id,
      type: row.type,
      receivedAt: row.received_at,
      kind: textOf(data.kind),
      recordId: textOf(data.id),
      before: data.before ?? null,
      after: data.after ?? null,
      changed: Array.isArray(data.changed) ? data.changed.map(String) : [],
      source: textOf(data.source),
    };
  });
}

const textOf = (value: unknown): string => (typeof value === "string" ? value : "");

/** `data.id` of an event's payload when it is a non-empty string. */
function namedRecordId(payload: unknown): string | undefined {
  const data = (payload as { data?: unknown } | null)?.data;
  const id = (data as { id?: unknown } | null | undefined)?.id;
  return typeof id === "string" && id !== "" ? id : undefined;
}
