import type { Logger } from "pino";
import type { MirrorStore } from "../../mirror/store.js";
import { paginatePages, type ApiClient } from "../../upstream/index.js";
import { WHOLE_MENU, type RefreshScheduler } from "./refresh-scheduler.js";
import { LISTERS, TRACKS_IDS, type SyncedKind } from "./synced-kinds.js";
import type { MirrorWriter } from "./mirror-writer.js";

export interface RefreshOutcome {
  calls: number;
  written: number;
  /** Ids an event named that a whole sweep of the restaurant did not find. */
  missing: string[];
}

/**
 * Re-reads a restaurant's records through the API (the source of truth) into the mirror. The spec
 * has no GET by id, so one list sweep serves every pending id of the restaurant, page by page,
 * and stops as soon as all of them were seen (the sandbox lists newest first, so usually page 1).
 */
export async function refreshRestaurant(deps: {
  api: ApiClient;
  mirror: MirrorStore;
  scheduler: RefreshScheduler;
  /** Writes with change events (source `webhook`); without it, plain upserts that emit none. */
  writer?: MirrorWriter;
  logger: Logger;
  kind: SyncedKind;
  restaurantId: string;
}): Promise<RefreshOutcome> {
  const { api, mirror, scheduler, kind, restaurantId } = deps;
  const pending = await scheduler.pending(kind, restaurantId);
  if (pending.size === 0) return { calls: 0, written: 0, missing: [] };
  const wanted = new Set(TRACKS_IDS[kind] ? pending.keys() : []);
  const outcome: RefreshOutcome = { calls: 0, written: 0, missing: [] };
  // Each attempt stamped by the shared clock after its rate-limit slot (ApiClient ListOptions.clock).
  const read = (cursor: string | undefined) => LISTERS[kind](api, restaurantId, cursor, "high", () => mirror.clock());
  // The guarded iterator: a cursor handed back again throws, and the pending ids stay unsettled.
  for await (const page of paginatePages(read)) {
    outcome.calls++;
    const result = deps.writer
      ? await deps.writer.write(kind, page.data, page.readAt, "webhook", page.refused)
      : await mirror.upsert(kind, page.data, page.readAt, { refused: page.refused });
    outcome.written += result.written;
    // A record set aside was read all the same: its id is settled (reported, not retried forever).
    for (const record of page.data) wanted.delete(record.id);
    for (const { id } of result.rejected) if (id !== undefined) wanted.delete(id);
    if (TRACKS_IDS[kind] && wanted.size === 0) break;
  }
  outcome.missing = [...wanted].filter((id) => id !== WHOLE_MENU);
  if (outcome.missing.length > 0)
    deps.logger.warn({ kind, restaurantId, missing: outcome.missing }, "records named by events were not found upstream");
  await scheduler.settle(kind, restaurantId, pending);
  return outcome;
}
