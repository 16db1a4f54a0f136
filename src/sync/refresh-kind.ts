import { identityProblem, type MirrorStore } from "../mirror/mirror-store.js";
import { UpstreamAuthError, UpstreamError, UpstreamPageRefusedError } from "../upstream/errors.js";
import {
  candidatesFor,
  DEPTH_REACH,
  filterKey,
  planNextRead,
  RECENT_REACH,
  type CandidateHint,
  type PlannedRead,
  type ReadPrices,
  type Target,
} from "./read-plan.js";
import type { Logger } from "pino";
import { WHOLE_MENU, type PendingId, type PendingNote, type RefreshQueue } from "./refresh-queue.js";
import { filterNames, RESOURCES, walkOf, writePage, type Page, type ReadFilter } from "./resources.js";
import type { SyncedKind } from "../mirror/kinds.js";
import { type ApiClient } from "../upstream/client.js";
import { readList } from "../upstream/paginate.js";
import type { MirrorWriter } from "../mirror/change-outbox.js";
import { exponentialDelayMs } from "../base/backoff.js";

export interface RefreshKindDeps extends Omit<RefreshReadContext, "kind"> {
  scheduler: RefreshQueue;
  logger: Logger;
  kind: SyncedKind;
  /** How long an id the API does not list stays pending (with backoff) before it is reported. */
  giveUpMs: number;
  /** Told of every read made (metrics). */
  onRead?: (read: { kind: SyncedKind; scope: "company" | "restaurant" }) => void;
  /** Told of every id given up on, after its row was written (the metric). */
  onUnlisted?: (kind: SyncedKind) => void;
  /**
   * The filters the upstream refused in this process (one per worker, so each is named once).
   * @defaultValue a new one, this job's only
   */
  refused?: RefusedFilters;
  /** @defaultValue Date.now */
  now?: () => number;
}

export interface RefreshOutcome {
  calls: number;
  reads: number;
  written: number;
  /** Pending ids this job read. */
  found: number;
  /** Ids no read found this round: kept pending with backoff. */
  missing: string[];
  /** Ids given up on this round (reported in unlisted_records). */
  unlisted: string[];
}

/** Reads a job makes at most; ids left over stay due for the next job (not counted as misses). */
export const MAX_READS_PER_JOB = 50;
/** Backoff between rounds that miss an id: 1 s, 2 s, 4 s … at most a minute. */
export const backoffAfterMiss = (misses: number) => exponentialDelayMs(Math.max(0, misses - 1), 1000, 60_000);

/** One pending id as this job works on it. */
type Work = Target & PendingId;

/**
 * The `refresh` job of one kind, company-wide: takes every pending id of the kind, lets the planner
 * (read-plan.ts) choose the reads that cover most of them per call, runs them (runRead, below),
 * forgets what was read and backs off or gives up on what was missed (`handleMisses`). What is
 * still pending afterwards is the next run's (refresh-queue.ts createRefreshJob asks for it).
 */
export async function refreshKind(deps: RefreshKindDeps): Promise<RefreshOutcome> {
  const pending = await deps.scheduler.pending(deps.kind);
  const outcome: RefreshOutcome = { calls: 0, reads: 0, written: 0, found: 0, missing: [], unlisted: [] };
  const job: JobDeps = { ...deps, refused: deps.refused ?? createRefusedFilters(), unwalkable: [] };
  if (RESOURCES[deps.kind].tracksIds) await refreshIds(job, await setAsideUnfit(deps, pending), outcome);
  else await refreshMenus(job, pending, outcome);
  const [first] = job.unwalkable;
  if (first)
    deps.logger.warn(
      { kind: deps.kind, reads: job.unwalkable.length, code: first.code, error: first.message },
      `${job.unwalkable.length} ${deps.kind} read(s) of this refresh cannot be walked: their ids count as missed (next candidate, then the give-up rule)`,
    );
  return outcome;
}

/**
 * Pending ids the mirror could neither store nor look up (a NUL in an event's `data.id`, an id
 * the routes cannot address: the mirror's own identity check, mirror-store.ts) are set aside as
 * the mirror sets aside any record it cannot hold: written to it as the record known of them (id
 * and restaurant), which it refuses into rejected_records with the reason (and the service's
 * warning and metric), then forgotten. Returns the rest, which this job refreshes.
 */
async function setAsideUnfit(deps: RefreshKindDeps, pending: readonly PendingId[]): Promise<PendingId[]> {
  const unfit = pending.filter((p) => identityProblem(deps.kind, p) !== undefined);
  if (unfit.length === 0) return [...pending];
  const known = unfit.map(({ id, restaurantId }) => ({ id, restaurantId }));
  await deps.mirror.upsert(deps.kind, known, await deps.mirror.clock());
  await deps.scheduler.forgetRead(deps.kind, unfit);
  return pending.filter((p) => !unfit.includes(p));
}

type JobDeps = RefreshKindDeps & {
  refused: RefusedFilters;
  /** This job's reads whose list cannot be walked (a cursor cycle, the page cap): named in one warning at its end. */
  unwalkable: UpstreamPageRefusedError[];
};

async function refreshIds(deps: JobDeps, pending: readonly PendingId[], outcome: RefreshOutcome): Promise<void> {
  const now = (deps.now ?? Date.now)();
  const work = await collectWork(deps, pending, now);
  const seen = new Set<string>();
  // Ids whose read stopped at its page budget: the next job goes on from there (`resume`).
  const carried = new Set<string>();
  let plan: PlannedRead | undefined;
  const open = () => work.filter((w) => !seen.has(w.id) && !carried.has(w.id));
  const prices = await bookingPrices(deps, work);
  while (outcome.reads < MAX_READS_PER_JOB) {
    await priceReads(deps, open());
    if (!(plan = planNextRead(open(), prices))) break;
    const read = await readOrRefused(deps, outcome, plan);
    if (read === "refused") {
      // Its targets go on to the candidates left once the refused filter is taken out.
      for (const w of open())
        w.candidates = [...w.candidates.slice(0, w.next), ...deps.refused.usable(deps.kind, w.candidates.slice(w.next))];
      if (plan.recent) for (const target of plan.targets) target.recentTried = true;
      continue;
    }
    if (read === "unwalkable") {
      // A read that cannot be walked missed its targets: they go on to their next candidate (from
      // its top), then to the miss rule, and never hold up the job's other ids.
      for (const target of plan.targets) {
        if (plan.recent) target.recentTried = true;
        else target.next++;
        delete target.resume;
      }
      continue;
    }
    for (const id of read.seen) seen.add(id);
    for (const target of plan.targets) {
      if (seen.has(target.id)) continue;
      // A missed first-page bet tried no candidate, so only a missed candidate moves on; a read
      // stopped at its budget did not miss: it goes on in the next job.
      if (plan.recent) target.recentTried = true;
      else if (read.stoppedAt) {
        target.resume = {
          ...(plan.restaurantId === undefined ? {} : { restaurantId: plan.restaurantId }),
          filter: filterKey(plan.filter),
          ...read.stoppedAt,
        };
        carried.add(target.id);
      } else target.next++;
    }
  }
  const found = work.filter((w) => seen.has(w.id));
  outcome.found = found.length;
  await deps.scheduler.forgetRead(deps.kind, found);
  // Left over by the read cap: still pending, due now. Every candidate missed: a backoff.
  const exhausted = work.filter((w) => !seen.has(w.id) && w.next >= w.candidates.length);
  await handleMisses(deps, exhausted, now, outcome);
  const stopped = work.filter((w) => !seen.has(w.id) && carried.has(w.id));
  await carryOn(deps, stopped, now, outcome);
}

/**
 * Ids whose read stopped at its page budget stay pending, due now, with where it stopped: the
 * next job reads on from there. The give-up rule still holds: one pending `giveUpMs` is reported.
 */
async function carryOn(deps: RefreshKindDeps, carried: readonly Work[], now: number, outcome: RefreshOutcome): Promise<void> {
  const overdue = carried.filter((w) => now - w.note.firstNotedAt >= deps.giveUpMs);
  await handleMisses(deps, overdue, now, outcome);
  for (const w of carried)
    if (w.resume && now - w.note.firstNotedAt < deps.giveUpMs) await deps.scheduler.defer(deps.kind, w, { ...w.note, resume: w.resume });
}

/**
 * Filters the upstream refused for good (a 4xx other than 429, 401 and 403: the bookings window's
 * upper bound is a name of our guessing, spec part 4), by kind and the filter's parameter names,
 * kept for the process: a refused filter is never asked again, and is named in one warning.
 */
export interface RefusedFilters {
  /** Notes a refused filter; true the first time (warn then). */
  add(kind: SyncedKind, filter: ReadFilter): boolean;
  /**
   * Candidates with every refused filter replaced by its fallback: the same window without its
   * upper bound (the read then stops by the list's order, runRead) when that is not
   * refused, else nothing (the next candidate). Left with none, the unfiltered list, unless it is
   * refused too: then the ids go on to the miss rule (backoff, then reported).
   */
  usable(kind: SyncedKind, candidates: readonly ReadFilter[]): ReadFilter[];
}

/** The parameter names a filter sends: what a refusal is kept by (its values change per id). */
const refusalKey = (kind: SyncedKind, filter: ReadFilter) => `${kind}?${filterNames(filter).join(",")}`;

export function createRefusedFilters(): RefusedFilters {
  const refused = new Set<string>();
  const ok = (kind: SyncedKind, filter: ReadFilter) => !refused.has(refusalKey(kind, filter));
  return {
    add(kind, filter) {
      const key = refusalKey(kind, filter);
      if (refused.has(key)) return false;
      refused.add(key);
      return true;
    },
    usable(kind, candidates) {
      const out = new Map<string, ReadFilter>();
      for (const filter of candidates) {
        const { to, ...open } = filter;
        const use = ok(kind, filter) ? filter : to !== undefined && ok(kind, open) ? open : undefined;
        if (use) out.set(filterKey(use), use);
      }
      if (out.size === 0 && candidates.length > 0 && ok(kind, {})) return [{}];
      return [...out.values()];
    },
  };
}

/** Whether a read's failure is the upstream refusing its filter for good (not a key, a limit or an outage: those fail the job). */
const isRefusal = (err: unknown): err is UpstreamError =>
  err instanceof UpstreamError &&
  !err.retryable &&
  !(err instanceof UpstreamAuthError) &&
  err.status !== undefined &&
  err.status >= 400 &&
  err.status < 500;

/**
 * `readTallied`, or "refused" when the upstream refused the read's filter for good: then the filter
 * is kept as refused (named in a warning the first time in the process) and the job goes on; or
 * "unwalkable" when the read's list cannot be walked on (it cycles, runs past the page cap, or
 * answers a page that can never be read): kept for the job's one warning, and the job goes on.
 */
async function readOrRefused(deps: JobDeps, outcome: RefreshOutcome, plan: PlannedRead): Promise<ReadOutcome | "refused" | "unwalkable"> {
  try {
    return await readTallied(deps, outcome, plan);
  } catch (err) {
    if (err instanceof UpstreamPageRefusedError) {
      outcome.reads++;
      deps.unwalkable.push(err);
      return "unwalkable";
    }
    if (!isRefusal(err)) throw err;
    outcome.reads++;
    outcome.calls++;
    const filter = filterNames(plan.filter);
    if (deps.refused.add(deps.kind, plan.filter))
      deps.logger.warn(
        { kind: deps.kind, filter, status: err.status, code: err.code, error: err.message },
        `the upstream refuses ${deps.kind} reads filtered by ${filter.join(", ") || "nothing"}: this process reads the next candidate instead from now on`,
      );
    return "refused";
  }
}

/** Runs and counts a planned read: a first-page bet reads one page, a menu (no targets) its whole list, any other `maxPages`. */
async function readTallied(deps: RefreshKindDeps, outcome: RefreshOutcome, plan: PlannedRead): Promise<ReadOutcome> {
  const maxPages = plan.recent ? 1 : plan.targets.length === 0 ? Number.POSITIVE_INFINITY : deps.maxPages;
  const read = await runRead({ ...deps, maxPages }, plan);
  deps.onRead?.({ kind: deps.kind, scope: plan.restaurantId === undefined ? "company" : "restaurant" });
  outcome.reads++;
  outcome.calls += read.calls;
  outcome.written += read.written;
  return read;
}

/** The pending ids to look for now, with their candidate reads; those waiting out a backoff are left for later. */
async function collectWork(deps: JobDeps, pending: readonly PendingId[], now: number): Promise<Work[]> {
  const due = pending.filter((p) => p.note.retryAt === undefined || p.note.retryAt <= now);
  // Each id's mirror read is independent: all at once, not one id after another on the refresh's path.
  const hints = await Promise.all(due.map((p) => hintOf(deps.mirror, deps.kind, p.id, p.note)));
  const work = due.map((p, i): Work => {
    const hint = hints[i] ?? {};
    const resume = p.note.resume;
    return {
      ...p,
      sortKey: hint.sortKey,
      candidates: deps.refused.usable(deps.kind, candidatesFor(deps.kind, hint, now)),
      next: 0,
      ...(resume ? { resume } : {}),
    };
  });
  if (RESOURCES[deps.kind].pricedBy !== "depth") return work;
  // Orders, in one count for the job: how near each id is to the top of the unfiltered list (the
  // first-page bet), and its depth in the list its first candidate reads.
  const priced = work.filter((w) => w.sortKey !== undefined);
  const first = (w: Work) => w.candidates[0] ?? {};
  const counts = await ordersNewer(deps.mirror, [
    ...priced.map((w) => ({ target: w, filter: {}, max: RECENT_REACH })),
    ...priced.map((w) => ({ target: w, filter: first(w), max: DEPTH_REACH })),
  ]);
  priced.forEach((w, i) => {
    w.recent = counts[i];
    w.depth = { [filterKey(first(w))]: counts[priced.length + i] ?? { company: 0, restaurant: 0 } };
  });
  return work;
}

/**
 * Orders: each id's `Depth` in the list its next candidate reads (bounded counts, once per id and
 * filter, one query for all of them): the planner's price of a company-wide read against
 * per-restaurant ones. Ids without a createdAt stay unpriced.
 */
async function priceReads(deps: RefreshKindDeps, targets: readonly Target[]): Promise<void> {
  if (RESOURCES[deps.kind].pricedBy !== "depth") return;
  const unpriced = targets.filter((t) => {
    const filter = t.candidates[t.next];
    return filter !== undefined && t.sortKey !== undefined && !t.depth?.[filterKey(filter)];
  });
  const asked = unpriced.map((t) => ({ target: t, filter: t.candidates[t.next] ?? {}, max: DEPTH_REACH }));
  const counts = await ordersNewer(deps.mirror, asked);
  asked.forEach(({ target, filter }, i) => {
    target.depth = { ...target.depth, [filterKey(filter)]: counts[i] ?? { company: 0, restaurant: 0 } };
  });
}

/**
 * Bookings: the mirror's bookings per day over the windows the ids may be read in, company-wide and
 * in the ids' restaurants (two queries per job): what merging windows and choosing a company-wide
 * or per-restaurant read are priced by.
 */
async function bookingPrices(deps: RefreshKindDeps, work: readonly Work[]): Promise<ReadPrices> {
  if (RESOURCES[deps.kind].pricedBy !== "days") return {};
  const days = work.flatMap((w) => w.candidates.flatMap((f) => (f.from !== undefined && f.to !== undefined ? [f.from, f.to] : [])));
  if (days.length === 0) return {};
  days.sort();
  const [from, to] = [days[0] ?? "", days.at(-1) ?? ""];
  const restaurants = [...new Set(work.map((w) => w.restaurantId))];
  const [bookingsByDay, bookingsByRestaurantDay] = await Promise.all([
    deps.mirror.countBookingsByDay(from, to),
    deps.mirror.countBookingsByRestaurantDay(from, to, restaurants),
  ]);
  return { bookingsByDay, bookingsByRestaurantDay };
}

/**
 * For each target, the orders the mirror holds newer than its createdAt (in its filter's status,
 * if any), company-wide and in its restaurant, counted up to `max`: one query for them all, none
 * when there is nothing to count.
 */
async function ordersNewer(
  mirror: MirrorStore,
  asked: readonly { target: Target; filter: ReadFilter; max: number }[],
): Promise<{ company: number; restaurant: number }[]> {
  if (asked.length === 0) return [];
  const queries = asked.flatMap(({ target, filter, max }) => {
    const base = { since: new Date(target.sortKey ?? 0), max, ...(filter.status === undefined ? {} : { status: filter.status }) };
    return [base, { ...base, restaurantId: target.restaurantId }];
  });
  const counts = await mirror.countOrdersNewer(queries);
  return asked.map((_, i) => ({ company: counts[2 * i] ?? 0, restaurant: counts[2 * i + 1] ?? 0 }));
}

/**
 * Where to look for an id: the events' hints (the note's fields are named as the record's),
 * completed from the mirror's copy (a thin event carries only id and restaurant). Both statuses are
 * lower bounds of the current one, so the furthest wins.
 */
async function hintOf(mirror: MirrorStore, kind: SyncedKind, id: string, note: PendingNote): Promise<CandidateHint & { sortKey?: number }> {
  const { sortKey, states } = RESOURCES[kind];
  const noted = sortKey(note);
  const stored = (states && note.status === undefined) || Number.isNaN(noted) ? await mirror.get(kind, id) : undefined;
  const key = Number.isNaN(noted) && stored ? sortKey(stored) : noted;
  if (!states) return Number.isNaN(key) ? {} : { day: key, sortKey: key };
  const fromMirror = (states.rank(stored?.status) ?? -1) > (states.rank(note.status) ?? -1);
  const status = fromMirror ? (stored?.status as string) : note.status;
  return {
    ...(status === undefined ? {} : { status, movedOn: fromMirror && note.status === undefined }),
    ...(Number.isNaN(key) ? {} : { sortKey: key }),
  };
}

/** Ids every candidate read missed: deferred with the next backoff, or, once pending for `giveUpMs`, reported and forgotten. */
async function handleMisses(deps: RefreshKindDeps, missed: readonly Work[], now: number, outcome: RefreshOutcome): Promise<void> {
  for (const w of missed) {
    const misses = (w.note.misses ?? 0) + 1;
    if (now - w.note.firstNotedAt >= deps.giveUpMs) {
      await reportUnlisted(deps, w, misses, now);
      outcome.unlisted.push(w.id);
      continue;
    }
    const retryAt = now + backoffAfterMiss(misses);
    // A missed read starts again from its list's top: the next round forgets where one stopped.
    await deps.scheduler.defer(deps.kind, w, { ...w.note, resume: undefined, misses, retryAt });
    outcome.missing.push(w.id);
  }
  if (outcome.missing.length > 0)
    deps.logger.debug(
      { kind: deps.kind, missing: outcome.missing.length },
      "records named by events are not listed yet; retrying with backoff",
    );
}

async function reportUnlisted(deps: RefreshKindDeps, w: Work, attempts: number, now: number): Promise<void> {
  const report = { kind: deps.kind, id: w.id, restaurantId: w.restaurantId, eventIds: w.note.eventIds ?? [], attempts };
  await deps.mirror.recordUnlisted({ ...report, firstNotedAt: new Date(w.note.firstNotedAt) });
  deps.onUnlisted?.(deps.kind);
  deps.logger.warn(
    { ...report, pendingSeconds: Math.round((now - w.note.firstNotedAt) / 1000) },
    "a record events named was never listed by the API: reported in unlisted_records, no longer looked for",
  );
  // Forgotten as if read (unless an event noted it again meanwhile: then it is looked for anew).
  await deps.scheduler.forgetRead(deps.kind, [w]);
}

/**
 * Restaurants waiting at once from which one company-wide menu read costs fewer calls than one read
 * each: a menu fits a page or two, the company's menus a few pages (bounded by the company's menu
 * size, not by time).
 */
export const COMPANY_WIDE_MENUS_FROM = 3;

/**
 * Menus are refreshed whole: each restaurant's list (every page), or the company's when
 * COMPANY_WIDE_MENUS_FROM or more wait. A menu read to its end forgets its restaurants' requests
 * (by the version taken, so one made meanwhile stays).
 */
async function refreshMenus(deps: JobDeps, pending: readonly PendingId[], outcome: RefreshOutcome): Promise<void> {
  const waiting = pending.filter((p) => p.id === WHOLE_MENU);
  const scopes = waiting.length >= COMPANY_WIDE_MENUS_FROM ? [undefined] : waiting.map((p) => p.restaurantId);
  for (const restaurantId of scopes) {
    const read = await readOrRefused(deps, outcome, { ...(restaurantId === undefined ? {} : { restaurantId }), filter: {}, targets: [] });
    const scope = waiting.filter((p) => restaurantId === undefined || p.restaurantId === restaurantId);
    // A menu refused for good, or whose list cannot be walked, has no narrower read to fall back
    // to: its requests end with the warning, and the other restaurants' menus are read all the same.
    await deps.scheduler.forgetRead(deps.kind, scope);
    if (typeof read !== "string") outcome.found += scope.length;
  }
}

// One planned read, run and tallied.

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
