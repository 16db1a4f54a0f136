import type { MirrorStore } from "../../mirror/store.js";
import { paginatePages, type ApiClient } from "../../upstream/index.js";
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
 * webhook-driven refreshes keep their share of the rate budget. Pages through the guarded
 * iterator: an upstream that hands back a cursor again fails the sweep instead of looping.
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
    let pages = 0;
    const read = async (cursor: string | undefined) => {
      // The shared clock, read before the request is sent: what this page can be trusted as of.
      const readAt = await deps.mirror.clock();
      return { ...(await LISTERS[kind](deps.api, undefined, cursor, deps.priority ?? "low")), readAt };
    };
    for await (const page of paginatePages(read)) {
      await deps.mirror.upsert(kind, page.data, page.readAt);
      pages++;
      totals[kind] += page.data.length;
      deps.onProgress?.({ kind, pages, records: totals[kind], done: page.nextCursor === null });
    }
  }
  return totals;
}
