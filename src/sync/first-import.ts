import type { MirrorChange, MirrorStore } from "../mirror/mirror-store.js";
import type { MirrorWriter, SourceOf } from "../mirror/change-outbox.js";
import type { ChangeSource } from "../events/catalog.js";
import type { Kysely } from "kysely";
import type { DatabaseSchema } from "../mirror/database.js";
import { checkpointsByAccount, type SyncCheckpoint, type SyncCheckpoints } from "../mirror/sync-checkpoints.js";
import type { PendingId } from "./refresh-queue.js";
import { RESOURCES, SYNCED_KINDS, type Page } from "./resources.js";
import type { SyncedKind } from "../mirror/kinds.js";

// Is a first import running, and what does that leave to whom? One read of every checkpoint
// (readImportState) answers each question the tiers, backfill and the change source ask, so the
// rules of when an import begins and ends live here and nowhere else.

/**
 * A backfill of a kind's whole list counts as running while its checkpoint, unfinished, was saved
 * this recently. A running one saves a page every few seconds, and its longest wait is a 429's
 * Retry-After (honoured up to 5 min, upstream/client.ts); one that crashed or was stopped saves no
 * more, and so holds the full tier back no longer than this.
 */
export const BACKFILL_ALIVE_MS = 10 * 60_000;

/** Whether a checkpoint's walk reads the kind's whole list: a full pass, or a backfill without `--since`. */
const walksWholeList = (c: SyncCheckpoint) => c.tier === "full" || c.since === null;

/** The walks' checkpoints at one moment, and what they say about first imports. */
export interface ImportState {
  /** The database's clock when they were read (epoch ms). */
  now: number;
  full(kind: string): SyncCheckpoint | undefined;
  backfill(kind: string): SyncCheckpoint | undefined;
  /**
   * Whether a first import of this kind (a full pass or backfill that began on an empty mirror) is
   * still running: its pass is unfinished, and no pass of the kind in the other tier started after
   * it or completed since. An interrupted first backfill is never completed: its row alone would
   * hold the mark for good.
   */
  importing(kind: string): boolean;
  /**
   * Whether a write of this kind is a first import's (`backfill` changes, no missed webhooks): while
   * the mirror of the kind is empty, or while `importing` holds. Otherwise the active tier, which
   * runs every few minutes, would call the rest of the import's records missed webhooks the moment
   * its first page landed.
   */
  firstImport(kind: SyncedKind): Promise<boolean>;
  /**
   * Whether a walk starting now is the kind's first import: `firstImport`, or, for a walk of the
   * kind's whole list (a full pass, a backfill without `--since`: `since` null), the kind's first
   * such walk (none has a checkpoint yet).
   * The mirror then never held the whole list, whatever an active pass, a refresh or a webhook
   * wrote into it first: on a fresh stack the active tier's first pass writes today's bookings
   * before the full tier starts, and the older bookings the full pass reads next are the import's,
   * not missed webhooks. Only the first walk: a kind whose walks never complete (a page the API
   * never answers readably) does not stay an import for good.
   */
  walkImports(kind: SyncedKind, since?: string | null): Promise<boolean>;
  /**
   * Whether a backfill of the whole list (no `--since`) is walking `kind` now or will in this run:
   * its checkpoint unfinished, and the run alive. The full tier leaves such a kind to it (that
   * backfill is the pass: two walkers of one list would read it twice at once).
   */
  backfillWalking(kind: string): boolean;
  /**
   * Whether the active tier leaves `kind` to a first import: the kind's full pass is its first
   * import (`importing`, by the full tier: a new account's or a fresh deploy's first day), or a
   * whole-list backfill run holding it goes on (a kind unfinished, the run alive) and no whole-list
   * walk of the kind had completed before that run began, so the mirror never held the whole list,
   * whatever an active pass or refresh wrote into it. A run's completed kinds too, until the run
   * ends or stops saving: one import. Either import reads every record anyway.
   */
  leftToImport(kind: string): boolean;
  /**
   * Whether a kind's next walk of its whole list is due: `intervalMs` after the last one started —
   * its last full pass (complete, or given up at a page it could not read), or a backfill of the
   * whole list that completed later: it read the same pages, so a service started after its first
   * import does not read the history again at once. Due at once when none has ended.
   */
  passDue(kind: string, intervalMs: number): boolean;
}

/** Reads every checkpoint and the database's clock once; the answers are computed from that read. */
export async function readImportState(deps: {
  mirror: Pick<MirrorStore, "list" | "clock">;
  checkpoints: SyncCheckpoints;
}): Promise<ImportState> {
  const [rows, clock] = await Promise.all([deps.checkpoints.list(), deps.mirror.clock()]);
  const now = clock.getTime();
  const of = (tier: SyncCheckpoint["tier"], kind: string) => rows.find((c) => c.tier === tier && c.kind === kind);
  const backfills = rows.filter((c) => c.tier === "backfill");
  // A run starts every kind's checkpoint at once, then walks them in turn: its checkpoints began
  // within BACKFILL_ALIVE_MS of each other. It is alive while one of them saved within that time.
  const runOf = (own: SyncCheckpoint) =>
    backfills.filter((b) => b.since === null && Math.abs(b.passStartedAt.getTime() - own.passStartedAt.getTime()) <= BACKFILL_ALIVE_MS);
  const alive = (run: readonly SyncCheckpoint[]) => run.some((b) => now - b.updatedAt.getTime() < BACKFILL_ALIVE_MS);
  const importsNow = (c: SyncCheckpoint | undefined): c is SyncCheckpoint =>
    c !== undefined &&
    c.firstImport &&
    c.passCompletedAt === null &&
    !rows.some(
      (o) =>
        o.kind === c.kind &&
        o.tier !== c.tier &&
        (o.passStartedAt > c.passStartedAt || (o.lastCompleteAt !== null && o.lastCompleteAt > c.passStartedAt)),
    );
  const importing = (kind: string) => rows.some((c) => c.kind === kind && importsNow(c));
  const firstImport = async (kind: SyncedKind) => importing(kind) || (await deps.mirror.list(kind, { limit: 1 })).data.length === 0;
  return {
    now,
    full: (kind) => of("full", kind),
    backfill: (kind) => of("backfill", kind),
    importing,
    firstImport,
    async walkImports(kind, since = null) {
      const firstWholeWalk = since === null && !rows.some((c) => c.kind === kind && walksWholeList(c));
      return firstWholeWalk || (await firstImport(kind));
    },
    backfillWalking(kind) {
      const own = of("backfill", kind);
      if (own?.since !== null || own.passCompletedAt !== null) return false;
      return alive(runOf(own));
    },
    leftToImport(kind) {
      // A full pass that is the kind's first import resumes at every tick until it ends, so it
      // needs no liveness rule of its own.
      if (importsNow(of("full", kind))) return true;
      const own = of("backfill", kind);
      if (own?.since !== null) return false;
      const run = runOf(own);
      if (!run.some((b) => b.passCompletedAt === null) || !alive(run)) return false;
      const began = own.passStartedAt.getTime();
      return ![of("full", kind), own].some((c) => c?.lastCompleteAt && c.lastCompleteAt.getTime() < began);
    },
    passDue(kind, intervalMs) {
      const starts = [of("full", kind), of("backfill", kind)]
        .filter((c): c is SyncCheckpoint => c !== undefined && walksWholeList(c) && c.passCompletedAt !== null)
        .map((c) => c.passStartedAt.getTime());
      return starts.length === 0 || now >= Math.max(...starts) + intervalMs;
    },
  };
}

/** Where an account's sync stands, as `GET /accounts` and `accounts list` show it. */
export interface AccountSyncState {
  /**
   * `importing` until every kind's whole list was walked once (a complete full pass, or a
   * complete backfill without `--since`): only then does the mirror hold the company; `live` after.
   * `key_refused` while the API refuses the account's key (its key_refused problem is open,
   * problems/problem-store.ts `withKeyRefused`): nothing is read until the key is replaced.
   */
  state: "importing" | "live" | "key_refused";
  /** Per kind: the records its running (else its last) walk read, and whether a whole walk ever completed. */
  kinds: Record<SyncedKind, { records: number; walked: boolean }>;
}

/** An account's sync state from its checkpoints (`checkpointsByAccount`). */
export function syncStateOf(checkpoints: readonly SyncCheckpoint[]): AccountSyncState {
  const whole = checkpoints.filter(walksWholeList);
  const kinds = Object.fromEntries(
    SYNCED_KINDS.map((kind) => {
      const own = whole.filter((c) => c.kind === kind);
      const running = own.find((c) => c.passCompletedAt === null);
      const records = running?.records ?? Math.max(0, ...own.map((c) => c.records));
      return [kind, { records, walked: own.some((c) => c.lastCompleteAt !== null) }];
    }),
  ) as AccountSyncState["kinds"];
  return { state: Object.values(kinds).every((k) => k.walked) ? "live" : "importing", kinds };
}

/** Each account with its sync state (`syncStateOf`), from one read of every checkpoint. */
export async function withSyncState<A extends { id: string }>(
  db: Kysely<DatabaseSchema>,
  accounts: readonly A[],
): Promise<(A & { sync: AccountSyncState })[]> {
  const checkpoints = await checkpointsByAccount(
    db,
    accounts.map((a) => a.id),
  );
  return accounts.map((a) => ({ ...a, sync: syncStateOf(checkpoints.get(a.id) ?? []) }));
}

/** How a sweep's writes produce change events. */
export interface SweepChanges {
  writer: MirrorWriter;
  source: Extract<ChangeSource, "reconcile" | "backfill">;
  /**
   * Reconcile: the ids waiting for a webhook refresh. A change to a record an event already named
   * (or to a menu with a refresh pending) is no missed webhook: it counts as `webhook`.
   */
  pending?: (kind: SyncedKind) => Promise<readonly PendingId[]>;
  /**
   * False: a first import's pages are written without change events (SYNC_IMPORT_CHANGE_EVENTS):
   * onboarding a company then costs its mirror writes only, not an event per record.
   * @defaultValue true
   */
  importChanges?: boolean;
}

/**
 * How a sweep page is written: its writer (none: the mirror alone, no change events) and each
 * change's source. A first import's writes are `backfill`, whatever the walker (no missed-webhook
 * storm), or produce no change events at all when `importChanges` is false. The pending ids live
 * in Redis: they are read once per page before the write, never from inside its transaction,
 * where a slow or absent Redis would hold a database connection (the embedded store's only one)
 * and stall every other database user.
 */
export async function sweepWriting(
  changes: SweepChanges | undefined,
  kind: SyncedKind,
  page: Page,
  firstImport: boolean,
): Promise<{ writer: MirrorWriter | undefined; source: SourceOf }> {
  if (!changes) return { writer: undefined, source: "backfill" };
  const { source, pending, writer } = changes;
  if (firstImport) return { writer: changes.importChanges === false ? undefined : writer, source: "backfill" };
  if (!pending) return { writer, source };
  // A menu is refreshed whole: its restaurant is what is pending.
  const { tracksIds } = RESOURCES[kind];
  const named = new Set((await pending(kind)).map((p) => (tracksIds ? p.id : p.restaurantId)));
  return { writer, source: (change: MirrorChange) => (named.has(tracksIds ? change.id : change.after.restaurantId) ? "webhook" : source) };
}
