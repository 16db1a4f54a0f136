import type { MirrorStore } from "../../mirror/store.js";
import { paginatePages, type ApiClient, type BudgetClass } from "../../upstream/index.js";
import { sourceOf, type SweepChanges } from "./change-source.js";
import { LISTERS, SYNCED_KINDS, type SyncedKind } from "./synced-kinds.js";

export type { SweepChanges } from "./change-source.js";

export interface SweepProgress {
  kind: SyncedKind;
  pages: number;
  records: number;
  done: boolean;
}

/**
 * Sweeps every order, booking and menu item of the company into the mirror: the backfill command
 * and the scheduled reconciliation that catches what webhooks missed. Runs in the `full` budget
 * class so webhook-driven refreshes keep their share of the rate budget. Pages through the guarded
 * iterator: an upstream that hands back a cursor again fails the sweep instead of looping.
 */
export async function sweepAll(deps: {
  api: ApiClient;
  mirror: MirrorStore;
  kinds?: readonly SyncedKind[];
  priority?: BudgetClass;
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
      LISTERS[kind](deps.api, undefined, cursor, deps.priority ?? "full", () => deps.mirror.clock());
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
