import type { MirrorStore } from "../mirror/mirror-store.js";
import { type ApiClient } from "../upstream/client.js";
import { readList } from "../upstream/paginate.js";
import type { MirrorWriter } from "../mirror/change-outbox.js";
import { writePage } from "./change-source.js";
import type { PlannedRead } from "./read-plan.js";
import { walkOf, type Page, type SyncedKind } from "./resources.js";

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
  /** The read stopped at its page budget with the list going on: where the next read of it goes on. */
  stoppedAt?: { cursor: string; pages: number };
}

/**
 * Runs one planned read through the list reader (upstream/paginate.ts): pages the list from the
 * plan's cursor (where an earlier read of it stopped) or its top, writes every page through the
 * mirror writer, and stops as soon as it can: every target seen; the list ended; its order (read
 * off the data, never assumed) shows every target still missing would already have come; or
 * `maxPages`, and then says where it stopped. A booking list that ignores the window's upper
 * bound (the spec does not show that parameter's name) is stopped by its order once it runs past
 * the dates of the bookings looked for.
 */
export async function runRead(ctx: RefreshReadContext, plan: PlannedRead): Promise<ReadOutcome> {
  const outcome: ReadOutcome = { calls: 0, written: 0, seen: new Set() };
  // No targets (a whole menu): the whole list. Else: until every target is seen or passed.
  const targets = plan.targets.length === 0 ? undefined : new Map(plan.targets.map((t) => [t.id, t.sortKey]));
  const walked = await readList(
    {
      ...walkOf(ctx, ctx.kind, { ...plan.filter, restaurantId: plan.restaurantId }, "webhook"),
      ...(plan.resume ? { cursor: plan.resume.cursor, pagesBefore: plan.resume.pages } : {}),
      targets,
      maxPages: ctx.maxPages,
    },
    async (page) => {
      outcome.calls++;
      const { written, settled } = await writeSeen(ctx, page, outcome.seen);
      outcome.written += written;
      return { settled };
    },
  );
  if (walked.error) throw walked.error;
  if (walked.end === "budget" && walked.cursor !== null)
    outcome.stoppedAt = { cursor: walked.cursor, pages: (plan.resume?.pages ?? 0) + walked.pages };
  return outcome;
}

/** Writes a page (source `webhook`) and adds the ids it read to `seen`. */
async function writeSeen(ctx: RefreshReadContext, page: Page, seen: Set<string>): Promise<{ written: number; settled: string[] }> {
  const result = await writePage(ctx.mirror, ctx.writer, ctx.kind, page, "webhook");
  for (const record of page.data) seen.add(record.id);
  // A record set aside was read all the same: its id is forgotten as read (reported, not retried
  // forever).
  const settled = result.rejected.flatMap(({ id }) => (id === undefined ? [] : [id]));
  for (const id of settled) seen.add(id);
  return { written: result.written, settled };
}
