import type { Logger } from "pino";
import { MIRROR_MAX_LIMIT, type MirrorRecord, type MirrorStore } from "../mirror/mirror-store.js";
import { readList } from "../upstream/paginate.js";
import type { ChangeSource } from "../events/catalog.js";
import { readImportState, sweepWriting, type SweepChanges } from "./first-import.js";
import { DAY_MS, dayOf, RESOURCES, SYNCED_KINDS, walkOf, writePage } from "./resources.js";
import type { ListQuery, Page, StateOrder, SweepDeps } from "./resources.js";
import type { SyncedKind } from "../mirror/kinds.js";

/** Pages of one final-status list an active pass reads at most looking for orders that left the open lists. */
export const MAX_FINAL_PAGES = 10;

export interface ActivePassOptions extends SweepDeps {
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

/**
 * A pass after a gap (every process away, Redis emptied): no webhook told of anything that changed
 * in it, so the pass reads every list that can hold such a change until it has covered the gap
 * (finalReads), bookings from the day before the gap, menus; no page budget but the walk's cap.
 */
export interface CatchUp {
  gapStart: Date;
}

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
  /** Kinds left out: a first import (a full pass or a backfill run) holds them (first-import.ts leftToImport). */
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
 * A plain pass leaves out each kind a first import holds (first-import.ts leftToImport): that
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
    if (catchUp || !(await readImportState(options)).leftToImport(kind)) return true;
    if (!outcome.leftToImport.includes(kind)) outcome.leftToImport.push(kind);
    return false;
  };
  // Today by UTC, the API's own zone for timestamps (spec part 2); after a gap, the day before it
  // began (a booking changed in the gap may be for any day since).
  const today = dayOf(catchUp ? catchUp.gapStart.getTime() - DAY_MS : startedAt.getTime());
  // The ids the open lists returned, kept only for kinds with states (what is read back below).
  const seen = new Map(SYNCED_KINDS.filter((kind) => RESOURCES[kind].states).map((kind) => [kind, new Set<string>()]));
  // Kind by kind, each kind's read-back right after its own open lists: after a gap the orders'
  // final lists come before a long bookings list, so a kind is right as soon as its lists are read.
  for (const kind of SYNCED_KINDS) {
    // Asked once a kind, before the pass writes any of it: a pass that begins on an empty mirror of
    // the kind imports it, every list it reads (the first list's page must not make the next
    // lists' records missed webhooks).
    const firstImport = await (await readImportState(options)).firstImport(kind);
    for (const query of RESOURCES[kind].activeReads(today))
      await readAll(options, outcome, kind, query, { seen: seen.get(kind), goOn: reads, firstImport });
    // Only after every open list of the kind was read whole: a record they did not return has left them.
    const { states } = RESOURCES[kind];
    if (states && !outcome.leftToImport.includes(kind) && (await reads(kind)))
      await readBackLeftOpen(options, outcome, { kind, states, seen: seen.get(kind) ?? new Set(), startedAt, firstImport });
  }
  return outcome;
}

/** Reads every page of one list into the mirror, while `goOn` says so before each; notes the ids it saw. */
async function readAll(
  options: ActivePassOptions,
  outcome: ActivePassOutcome,
  kind: SyncedKind,
  query: ListQuery,
  { seen, goOn, firstImport }: { seen?: Set<string>; goOn: (kind: SyncedKind) => Promise<boolean>; firstImport: boolean },
) {
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
  const { writer, source } = await sweepWriting(options.changes, kind, page, firstImport);
  const { changes } = await writePage(options.mirror, writer, kind, page, source);
  const tally = (outcome.byKind[kind] ??= { checked: 0, corrected: 0 });
  tally.checked += read;
  tally.corrected += changes.length;
  if (options.onPage) {
    const causes = await Promise.all(changes.map(async (c) => (typeof source === "function" ? source(c) : source)));
    options.onPage(kind, read, causes);
  }
}

/** How a pass reads one final list: whole, or down to a floor (epoch ms of createdAt) past its targets. */
type FinalRead = { status: string; whole: true } | { status: string; whole: false; floor?: number };

/**
 * The final lists a pass reads back, whole ones first (what they return is no longer looked for
 * in the others). A plain pass reads each for the open orders of the mirror that left the open
 * lists. A catch-up reads, besides, every order that may have reached the list in the gap: a
 * status orders in another final state can still move into (REFUNDED: any paid order, however
 * old, ORDER_STATES.from) has no floor the API lets a read stop at (no `updatedSince`, sorted by
 * createdAt), so it is read whole; the others are entered only from an open state (an order open
 * in the mirror, a target) or by an order created in the gap, so down to the gap's start.
 */
function finalReads(states: StateOrder, catchUp: CatchUp | undefined): FinalRead[] {
  const reads = states.final.map((status): FinalRead => {
    const fromFinal = states.final.some((f) => f !== status && states.from(f)?.includes(status));
    if (!catchUp) return { status, whole: false };
    return fromFinal ? { status, whole: true } : { status, whole: false, floor: catchUp.gapStart.getTime() };
  });
  return [...reads.filter((r) => r.whole), ...reads.filter((r) => !r.whole)];
}

/** A kind with states (orders), after its open lists were read: the ids they returned. */
interface LeftOpen {
  kind: SyncedKind;
  states: StateOrder;
  seen: ReadonlySet<string>;
  startedAt: Date;
  /** The pass imports the kind (its writes are `backfill`), as asked before its first list. */
  firstImport: boolean;
}

/**
 * The open orders of the mirror that no open list returned (`seen`), created before the pass
 * began, read back from the final lists: each until all were found, or the list shows it runs
 * newest first and went below the oldest of them by createdAt, or MAX_FINAL_PAGES. A catch-up
 * reads as finalReads says with no page budget: until every target is found or passed and the
 * floor is passed, a list in no order it can stop by read to its end, since anything behind is
 * worth the budget's whole pace (the walk's cap still ends a list that never ends).
 */
async function readBackLeftOpen(options: ActivePassOptions, outcome: ActivePassOutcome, left: LeftOpen) {
  const { kind, states, seen, startedAt, firstImport } = left;
  const { sortKey } = RESOURCES[kind];
  // Only a record created before the open lists were read could have been in them.
  const leftOpen = (await openOfMirror(options.mirror, kind, states)).filter((o) => !seen.has(o.id) && sortKey(o) < startedAt.getTime());
  outcome.leftOpen = leftOpen.length;
  const { catchUp } = options;
  if (leftOpen.length === 0 && !catchUp) return;
  const targets = new Map(leftOpen.map((o) => [o.id, sortKey(o)]));
  const found = new Set<string>();
  for (const read of finalReads(states, catchUp)) {
    for (const id of found) targets.delete(id);
    const floor = read.whole ? undefined : read.floor;
    if (!read.whole && targets.size === 0 && floor === undefined) continue;
    const walked = await readList(
      {
        ...walkOf(options, kind, { status: read.status }, "active"),
        // A whole list is read to its end: neither targets nor a floor stop it.
        ...(read.whole ? {} : { targets, floor }),
        ...(catchUp ? {} : { maxPages: MAX_FINAL_PAGES }),
        cap: options.pageCap,
      },
      async (page) => {
        await writeTallied(options, outcome, kind, page, firstImport);
        for (const r of page.data) if (targets.has(r.id)) found.add(r.id);
        return {};
      },
    );
    if (walked.error) throw walked.error;
  }
  outcome.recovered = found.size;
  if (found.size < leftOpen.length)
    options.logger?.warn(
      { missing: leftOpen.length - found.size },
      "open orders of the mirror were in no list the active tier read: the full tier will find them",
    );
}

/** Every record (order) the mirror holds in an open status (the mirror's own pages, by id). */
async function openOfMirror(mirror: MirrorStore, kind: SyncedKind, states: StateOrder): Promise<MirrorRecord[]> {
  const open: MirrorRecord[] = [];
  for (const status of states.open) {
    let cursor: string | undefined;
    do {
      const page = await mirror.list(kind, { status, limit: MIRROR_MAX_LIMIT, ...(cursor ? { cursor } : {}) });
      open.push(...page.data);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }
  return open;
}
