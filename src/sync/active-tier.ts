import type { Logger } from "pino";
import type { MirrorRecord, MirrorStore } from "../mirror/mirror-store.js";
import type { SyncCheckpoints } from "../mirror/sync-checkpoints.js";
import { type ApiClient } from "../upstream/client.js";
import { readList } from "../upstream/paginate.js";
import type { ChangeSource } from "../events/catalog.js";
import { isFirstImport, sweepSource, writePage, type SweepChanges } from "./change-source.js";
import { firstImportRunning } from "./full-tier.js";
import { ORDER_STATES, RESOURCES, walkOf, type ListQuery, type Page, type SyncedKind } from "./resources.js";

/** Pages of one final-status list an active pass reads at most looking for orders that left the open lists. */
export const MAX_FINAL_PAGES = 10;

export interface ActivePassOptions {
  api: ApiClient;
  mirror: MirrorStore;
  checkpoints: SyncCheckpoints;
  /** `reconcile` changes (or `webhook` when an event already asked; `backfill` on a first import). */
  changes: SweepChanges;
  logger?: Logger;
  /** After a gap in which no webhook could arrive: read back further (see CatchUp). */
  catchUp?: CatchUp;
  /** Each list's page cap (tests make it small). @defaultValue MAX_WALK_PAGES (upstream/paginate.ts) */
  pageCap?: number;
  /** After each page: records read and the changes they made (by source), for metrics. */
  onPage?: (kind: SyncedKind, read: number, changes: readonly ChangeSource[]) => void;
}

/** A pass after a gap: the final lists read down to their floors (catchUpFloor), bookings from the day before the gap. */
export interface CatchUp {
  gapStart: Date;
  /** The oldest createdAt read back in the final lists: refunds of older orders are the full tier's. */
  horizon: Date;
}

/** Pages of one final list a catch-up reads at most while it runs newest first towards its floor. */
export const CATCH_UP_MAX_PAGES = 100;

/** Records a kind's reads met, and those the mirror had wrong (written with a change). */
export interface KindTally {
  checked: number;
  corrected: number;
}

export interface ActivePassOutcome {
  calls: number;
  records: number;
  /** Open orders of the mirror that no open list returned (they moved to a final state). */
  leftOpen: number;
  /** Of those, the ones found in a final list and written. */
  recovered: number;
  byKind: Partial<Record<SyncedKind, KindTally>>;
  /** Kinds left out: a first-import backfill run holds them (full-tier.ts firstImportRunning). */
  leftToImport: SyncedKind[];
}

/**
 * One pass of the active tier, in the `active` budget class: what can still change, re-read
 * company-wide so its cost follows the active set and not the history — orders in each open
 * status, bookings from today on, every menu item — then the orders the mirror holds as open that
 * no open list returned: they moved to a final state while their webhook was missed, and are read
 * back from the final lists (newest first, stopping once past the oldest of them by createdAt).
 * With `catchUp`, the same pass reads back over the gap (CatchUp).
 *
 * A plain pass leaves out each kind a first import holds (full-tier.ts firstImportRunning): that
 * run reads every record anyway, and each active call is a page it waits for (on the first day,
 * bookings from today alone were ~17 pages a pass). The price: a missed webhook of a record the
 * run already passed is read once the run ends. A catch-up reads every kind: a gap's changes had
 * no webhook at all.
 */
export async function runActivePass(options: ActivePassOptions): Promise<ActivePassOutcome> {
  const { mirror, catchUp } = options;
  const startedAt = await mirror.clock();
  const outcome: ActivePassOutcome = { calls: 0, records: 0, leftOpen: 0, recovered: 0, byKind: {}, leftToImport: [] };
  // Asked before each page, not once: a backfill that begins while the pass runs (the service's
  // first pass, as the operator starts the first day's backfill) takes what the pass has not read yet.
  const reads = async (kind: SyncedKind) => {
    if (catchUp || !(await firstImportRunning(options.checkpoints, kind, (await mirror.clock()).getTime()))) return true;
    if (!outcome.leftToImport.includes(kind)) outcome.leftToImport.push(kind);
    return false;
  };
  const seen = new Set<string>();
  for (const status of ORDER_STATES.open) await readAll(options, outcome, "orders", { status }, { seen, goOn: reads });
  // Today by UTC, the API's own zone for timestamps (spec part 2); after a gap, the day before it
  // began (a booking changed in the gap may be for any day since).
  const from = catchUp ? new Date(catchUp.gapStart.getTime() - DAY_MS) : startedAt;
  const fromDay = from.toISOString().slice(0, 10);
  await readAll(options, outcome, "bookings", { from: fromDay }, { goOn: reads });
  await readAll(options, outcome, "menu-items", {}, { goOn: reads });
  // Only after every open list was read whole: an order they did not return has left them.
  if (!outcome.leftToImport.includes("orders") && (await reads("orders"))) await readBackLeftOpen(options, outcome, seen, startedAt);
  return outcome;
}

const DAY_MS = 86_400_000;

/** Reads every page of one list into the mirror, while `goOn` says so before each; notes the ids it saw. */
async function readAll(
  options: ActivePassOptions,
  outcome: ActivePassOutcome,
  kind: SyncedKind,
  query: ListQuery,
  { seen, goOn }: { seen?: Set<string>; goOn: (kind: SyncedKind) => Promise<boolean> },
) {
  const firstImport = await isFirstImport(options, kind);
  const walked = await readList(
    { ...walkOf(options, kind, query, "active"), goOn: () => goOn(kind), cap: options.pageCap },
    async (page) => {
      await writeTallied(options, outcome, kind, page, firstImport);
      for (const r of page.data) seen?.add(r.id);
      return {};
    },
  );
  if (walked.error) throw walked.error;
}

async function writeTallied(options: ActivePassOptions, outcome: ActivePassOutcome, kind: SyncedKind, page: Page, firstImport: boolean) {
  const read = page.data.length + page.refused.length;
  outcome.calls++;
  outcome.records += read;
  const source = await sweepSource(options.changes, kind, page, firstImport);
  const { changes } = await writePage(options.mirror, options.changes.writer, kind, page, source);
  const tally = (outcome.byKind[kind] ??= { checked: 0, corrected: 0 });
  tally.checked += read;
  tally.corrected += changes.length;
  if (options.onPage) {
    const causes = await Promise.all(changes.map(async (c) => (typeof source === "function" ? source(c) : source)));
    options.onPage(kind, read, causes);
  }
}

/**
 * How far down a catch-up reads a final list (epoch ms of createdAt): a status orders in another
 * final state can still move into (REFUNDED: any paid order, ORDER_STATES.from) down to the
 * horizon; the others only from an open state (an order open in the mirror, read back as any
 * pass does) or by an order created in the gap, so down to the gap's start.
 */
function catchUpFloor(catchUp: CatchUp, status: string): number {
  const fromFinal = ORDER_STATES.final.some((f) => f !== status && ORDER_STATES.from(f)?.includes(status));
  return (fromFinal ? catchUp.horizon : catchUp.gapStart).getTime();
}

/**
 * The open orders of the mirror that no open list returned (`seen`), created before the pass
 * began, read back from the final lists: each until all were found, or the list shows it runs
 * newest first and went below the oldest of them by createdAt, or MAX_FINAL_PAGES. A catch-up
 * reads each final list on down to its floor (catchUpFloor).
 */
async function readBackLeftOpen(options: ActivePassOptions, outcome: ActivePassOutcome, seen: Set<string>, startedAt: Date) {
  const leftOpen = (await openOrdersOfMirror(options.mirror)).filter((o) => !seen.has(o.id) && createdBefore(o, startedAt));
  outcome.leftOpen = leftOpen.length;
  const { catchUp } = options;
  if (leftOpen.length === 0 && !catchUp) return;
  const { sortKey } = RESOURCES.orders;
  const targets = new Map(leftOpen.map((o) => [o.id, sortKey(o)]));
  const found = new Set<string>();
  const firstImport = await isFirstImport(options, "orders");
  for (const status of ORDER_STATES.final) {
    const floor = catchUp && catchUpFloor(catchUp, status);
    for (const id of found) targets.delete(id);
    if (targets.size === 0 && floor === undefined) break;
    const walked = await readList(
      {
        ...walkOf(options, "orders", { status }, "active"),
        targets,
        floor,
        // Only a list known to run newest first reaches a floor: any other stops at the usual bound.
        maxPages: (order) => (floor !== undefined && order.direction === "descending" ? CATCH_UP_MAX_PAGES : MAX_FINAL_PAGES),
        cap: options.pageCap,
      },
      async (page) => {
        await writeTallied(options, outcome, "orders", page, firstImport);
        return {};
      },
    );
    if (walked.error) throw walked.error;
    for (const id of walked.seen) if (targets.has(id)) found.add(id);
  }
  outcome.recovered = found.size;
  if (found.size < leftOpen.length)
    options.logger?.warn(
      { missing: leftOpen.length - found.size },
      "open orders of the mirror were in no list the active tier read: the full tier will find them",
    );
}

/** Every order the mirror holds in an open status (the mirror's own pages, by id). */
async function openOrdersOfMirror(mirror: MirrorStore): Promise<MirrorRecord[]> {
  const open: MirrorRecord[] = [];
  for (const status of ORDER_STATES.open) {
    let cursor: string | undefined;
    do {
      const page = await mirror.list("orders", { status, limit: 100, ...(cursor ? { cursor } : {}) });
      open.push(...page.data);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }
  return open;
}

/** Only an order created before the open lists were read could have been in them. */
const createdBefore = (order: MirrorRecord, at: Date) => RESOURCES.orders.sortKey(order) < at.getTime();
