import type { MirrorStore } from "../mirror/mirror-store.js";
import type { MirrorWriter } from "../mirror/change-outbox.js";
import { paginatePages, type ApiClient } from "../upstream/index.js";
import { createListOrder } from "./list-order.js";
import { writePage } from "./change-source.js";
import type { PlannedRead } from "./read-plan.js";
import { readPage, RESOURCES, type Page, type SyncedKind } from "./resources.js";

/** What a refresh read needs: the API, the mirror and how it writes. */
export interface RefreshReadContext {
  api: ApiClient;
  mirror: MirrorStore;
  /** Writes with change events (source `webhook`); without it, plain upserts that emit none. */
  writer?: MirrorWriter;
  kind: SyncedKind;
  /** Pages one read walks at most when the list's order cannot stop it (SYNC_REFRESH_MAX_PAGES). */
  maxPages: number;
}

export interface ReadOutcome {
  calls: number;
  written: number;
  /** Every id the read met, rejected ones too (`writeSeen`). */
  seen: Set<string>;
}

/**
 * Runs one planned read: pages the list, writes every page through the mirror writer, and stops as
 * soon as it can: every target seen; the list ended; its order (read off the data, never assumed)
 * shows every target still missing would already have come; or `maxPages`. A booking list that
 * ignores the window's upper bound (the spec does not show that parameter's name) is stopped by
 * its order once it runs past the bound.
 */
export async function runRead(ctx: RefreshReadContext, plan: PlannedRead): Promise<ReadOutcome> {
  const { sortKey } = RESOURCES[ctx.kind];
  const order = createListOrder();
  const outcome: ReadOutcome = { calls: 0, written: 0, seen: new Set() };
  const upper = plan.filter.to === undefined ? undefined : Date.parse(plan.filter.to) + 86_400_000 - 1;
  for await (const page of paginatePages((cursor) =>
    readPage(ctx, ctx.kind, { ...plan.filter, restaurantId: plan.restaurantId, cursor }, "webhook"),
  )) {
    outcome.calls++;
    outcome.written += await writeSeen(ctx, page, outcome.seen);
    order.observe(page.data.map(sortKey));
    if (page.nextCursor === null) break;
    // No targets (a whole menu): the whole list. Else: until every target is seen or passed.
    const left = plan.targets.filter((t) => !outcome.seen.has(t.id));
    if (plan.targets.length > 0 && left.every((t) => t.sortKey !== undefined && order.passed(t.sortKey))) break;
    if (upper !== undefined && order.passed(upper)) break;
    if (outcome.calls >= ctx.maxPages) break;
  }
  return outcome;
}

/** Writes a page (source `webhook`) and adds the ids it read to `seen`. */
async function writeSeen(ctx: RefreshReadContext, page: Page, seen: Set<string>): Promise<number> {
  const result = await writePage(ctx.mirror, ctx.writer, ctx.kind, page, "webhook");
  for (const record of page.data) seen.add(record.id);
  // A record set aside was read all the same: its id is forgotten as read (reported, not retried
  // forever).
  for (const { id } of result.rejected) if (id !== undefined) seen.add(id);
  return result.written;
}
