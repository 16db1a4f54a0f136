import type { MirrorStore } from "../../mirror/store.js";
import type { ApiClient } from "../../upstream/index.js";
import { LISTERS, SYNCED_KINDS, type Priority, type SyncedKind } from "./synced-kinds.js";

export interface SweepProgress {
  kind: SyncedKind;
  pages: number;
  records: number;
  done: boolean;
}

/**
 * Sweeps every order, booking and menu item of the company into the mirror: the backfill command
 * and the scheduled reconciliation that catches what webhooks missed. Runs at low priority so
 * webhook-driven refreshes keep their share of the rate budget.
 */
export async function sweepAll(deps: {
  api: ApiClient;
  mirror: MirrorStore;
  kinds?: readonly SyncedKind[];
  priority?: Priority;
  onProgress?: (progress: SweepProgress) => void;
}): Promise<Record<SyncedKind, number>> {
  const kinds = deps.kinds ?? SYNCED_KINDS;
  const totals = { orders: 0, bookings: 0, "menu-items": 0 };
  for (const kind of kinds) {
    let cursor: string | undefined;
    let pages = 0;
    do {
      const fetchedAt = Date.now();
      const page = await LISTERS[kind](deps.api, undefined, cursor, deps.priority ?? "low");
      await deps.mirror.upsert(kind, page.data, fetchedAt);
      pages++;
      totals[kind] += page.data.length;
      cursor = page.nextCursor ?? undefined;
      deps.onProgress?.({ kind, pages, records: totals[kind], done: !cursor });
    } while (cursor);
  }
  return totals;
}
