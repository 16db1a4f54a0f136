import type { ChangeSource } from "../events/change-events.js";
import type { MirrorChange, MirrorStore, UpsertResult } from "../mirror/store.js";
import type { SyncCheckpoints } from "../mirror/sync-checkpoints.js";
import type { PendingIds } from "./refresh-scheduler.js";
import { WHOLE_MENU } from "./refresh-scheduler.js";
import { RESOURCES, type Page, type SyncedKind } from "./resources.js";
import type { MirrorWriter, SourceOf } from "../mirror/mirror-writer.js";

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
  pending?: (kind: SyncedKind, restaurantId: string) => Promise<PendingIds>;
}

/**
 * Each change's source on a sweep page: a first import's writes are `backfill`, whatever the walker
 * (no missed-webhook storm). The pending ids live in Redis: they are read for the page's restaurants
 * before the write, never from inside its transaction, where a slow or absent Redis would hold a
 * database connection (the embedded store's only one) and stall every other database user.
 */
export async function sweepSource(changes: SweepChanges, kind: SyncedKind, page: Page, firstImport: boolean): Promise<SourceOf> {
  const { source, pending } = changes;
  if (firstImport) return "backfill";
  if (!pending) return source;
  const restaurants = [...new Set(page.data.map((r) => r.restaurantId))];
  const byRestaurant = new Map(await Promise.all(restaurants.map(async (id) => [id, await pending(kind, id)] as const)));
  return (change: MirrorChange) => {
    const ids = byRestaurant.get(change.after.restaurantId);
    return ids?.has(RESOURCES[kind].tracksIds ? change.id : WHOLE_MENU) ? "webhook" : source;
  };
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
