import type { ChangeSource } from "../../events/change-events.js";
import type { MirrorChange, MirrorStore } from "../../mirror/store.js";
import { paginatePages, type ApiClient } from "../../upstream/index.js";
import type { MirrorWriter } from "./mirror-writer.js";
import type { PendingIds } from "./refresh-scheduler.js";
import { WHOLE_MENU } from "./refresh-scheduler.js";
import { LISTERS, SYNCED_KINDS, type Priority, type SyncedKind } from "./synced-kinds.js";

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

export interface SweepProgress {
  kind: SyncedKind;
  pages: number;
  records: number;
  done: boolean;
}

/**
 * Sweeps every order, booking and menu item of the company into the mirror: the backfill command
 * and the scheduled reconciliation that catches what webhooks missed. Runs at low priority so
 * webhook-driven refreshes keep their share of the rate budget. Pages through the guarded
 * iterator: an upstream that hands back a cursor again fails the sweep instead of looping.
 */
export async function sweepAll(deps: {
  api: ApiClient;
  mirror: MirrorStore;
  kinds?: readonly SyncedKind[];
  priority?: Priority;
  /** Without it, writes emit no change events (tests, and backfill --no-changes). */
  changes?: SweepChanges;
  onProgress?: (progress: SweepProgress) => void;
}): Promise<Record<SyncedKind, number>> {
  const kinds = deps.kinds ?? SYNCED_KINDS;
  const totals = { orders: 0, bookings: 0, "menu-items": 0 };
  for (const kind of kinds) {
    let pages = 0;
    // The shared clock, read as each attempt is sent (after its rate-limit slot): what the page can be trusted as of.
    const read = (cursor: string | undefined) =>
      LISTERS[kind](deps.api, undefined, cursor, deps.priority ?? "low", () => deps.mirror.clock());
    for await (const page of paginatePages(read)) {
      if (deps.changes)
        await deps.changes.writer.write(kind, page.data, page.readAt, await sourceOf(deps.changes, kind, page.data), page.refused);
      else await deps.mirror.upsert(kind, page.data, page.readAt, { refused: page.refused });
      pages++;
      totals[kind] += page.data.length + page.refused.length;
      deps.onProgress?.({ kind, pages, records: totals[kind], done: page.nextCursor === null });
    }
  }
  return totals;
}

/**
 * Each change's source. The pending ids live in Redis: they are read for the page's restaurants
 * before the write, never from inside its transaction, where a slow or absent Redis would hold a
 * database connection (the embedded store's only one) and stall every other database user.
 */
async function sourceOf(
  { source, pending }: SweepChanges,
  kind: SyncedKind,
  records: readonly { restaurantId: string }[],
): Promise<ChangeSource | ((change: MirrorChange) => ChangeSource)> {
  if (!pending) return source;
  const restaurants = [...new Set(records.map((r) => r.restaurantId))];
  const byRestaurant = new Map(await Promise.all(restaurants.map(async (id) => [id, await pending(kind, id)] as const)));
  return (change) => {
    const ids = byRestaurant.get(change.after.restaurantId);
    return ids?.has(kind === "menu-items" ? WHOLE_MENU : change.id) ? "webhook" : source;
  };
}
