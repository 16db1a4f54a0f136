import type { MirrorChange, MirrorStore, UpsertResult } from "../mirror/mirror-store.js";
import type { MirrorWriter, SourceOf } from "../mirror/change-outbox.js";
import type { ChangeSource } from "../events/catalog.js";
import type { SyncCheckpoints } from "../mirror/sync-checkpoints.js";
import type { PendingId } from "./refresh-queue.js";
import { RESOURCES, type Page, type SyncedKind } from "./resources.js";

/**
 * Writes one page the API answered, as every reader does: through `writer` with its changes'
 * source, or without one (`backfill --no-changes`) a plain upsert that emits no change events.
 */
export function writePage(
  mirror: MirrorStore,
  writer: MirrorWriter | undefined,
  kind: SyncedKind,
  page: Page,
  source: SourceOf,
): Promise<UpsertResult> {
  if (!writer) return mirror.upsert(kind, page.data, page.readAt, { refused: page.refused });
  return writer.write(kind, page.data, page.readAt, source, page.refused);
}

/** How a sweep's writes produce change events. */
export interface SweepChanges {
  writer: MirrorWriter;
  source: Extract<ChangeSource, "reconcile" | "backfill">;
  /**
   * Reconcile: the ids waiting for a webhook refresh. A change to a record an event already named
   * (or to a menu with a refresh pending) is no missed webhook: it counts as `webhook`.
   */
  pending?: (kind: SyncedKind) => Promise<readonly PendingId[]>;
}

/**
 * Each change's source on a sweep page: a first import's writes are `backfill`, whatever the walker
 * (no missed-webhook storm). The pending ids live in Redis: they are read once per page before
 * the write, never from inside its transaction, where a slow or absent Redis would hold a
 * database connection (the embedded store's only one) and stall every other database user.
 */
export async function sweepSource(changes: SweepChanges, kind: SyncedKind, page: Page, firstImport: boolean): Promise<SourceOf> {
  const { source, pending } = changes;
  if (firstImport) return "backfill";
  if (!pending) return source;
  // A menu is refreshed whole: its restaurant is what is pending.
  const { tracksIds } = RESOURCES[kind];
  const named = new Set((await pending(kind)).map((p) => (tracksIds ? p.id : p.restaurantId)));
  return (change: MirrorChange) => (named.has(tracksIds ? change.id : change.after.restaurantId) ? "webhook" : source);
}

/**
 * A reconciliation write is a first import (`backfill`, no missed webhooks) while the mirror of
 * its kind is empty, or while a full pass or backfill that began on an empty mirror is still
 * running: otherwise the active tier, which runs every few minutes, would call the rest of the
 * first import's records missed webhooks the moment its first page landed.
 */
export async function isFirstImport(deps: { mirror: Pick<MirrorStore, "list">; checkpoints: SyncCheckpoints }, kind: SyncedKind) {
  return (await deps.checkpoints.importing(kind)) || (await deps.mirror.list(kind, { limit: 1 })).data.length === 0;
}
