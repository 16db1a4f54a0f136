import { sql, type Kysely, type Selectable } from "kysely";
import { type DatabaseSchema } from "./database.js";
import { DEFAULT_ACCOUNT } from "../config/defaults.js";
import type { CursorCycleGuard } from "../upstream/paginate.js";

/** The resumable walks: the full reconciliation tier and the backfill command. */
type CheckpointTier = "full" | "backfill";

/** Where one walk of one kind's whole list stands (one row of sync_checkpoints). */
export interface SyncCheckpoint {
  tier: CheckpointTier;
  kind: string;
  /** The upstream's cursor of the next page; null at the top of a pass, and once it completed. */
  cursor: string | null;
  passStartedAt: Date;
  /** null while the pass runs. */
  passCompletedAt: Date | null;
  /** Records and pages read so far in this pass. */
  records: number;
  pages: number;
  /** The mirror held nothing of this kind when the pass began: its writes are `backfill` changes. */
  firstImport: boolean;
  /** backfill --since (YYYY-MM-DD) the pass was started with. */
  since: string | null;
  /** When the last pass that reached the end of the list completed. */
  lastCompleteAt: Date | null;
  /** When the row was last saved (started, advanced, ended): a walker that stopped saving is gone. */
  updatedAt: Date;
  /** The pass's cycle guard as of `cursor` (null at the top of a pass): the next slice goes on with it. */
  guard?: CursorCycleGuard | null;
}

/** Where a pass stands after a page: the next cursor and the counts so far. */
export interface CheckpointProgress {
  cursor: string | null;
  records: number;
  pages: number;
  /** The cycle guard after the page (upstream/paginate.ts): kept with the cursor so the pass's guard spans its slices. */
  guard?: CursorCycleGuard;
}

export interface SyncCheckpoints {
  /** The account (company) whose walks these are: every query is scoped to it. */
  readonly account: string;
  get(tier: CheckpointTier, kind: string): Promise<SyncCheckpoint | undefined>;
  /** Every checkpoint of a tier (of both, without one), by kind. */
  list(tier?: CheckpointTier): Promise<SyncCheckpoint[]>;
  /** Starts a new pass at the top (counts at 0, started now by the database's clock); keeps lastCompleteAt. */
  start(tier: CheckpointTier, kind: string, pass: { firstImport: boolean; since?: string | null }): Promise<SyncCheckpoint>;
  /**
   * Saves the position after a page, only if the row is still where `from` left it (same pass,
   * same cursor): a second walker of the same pass (an overlapping slice, two backfills) loses
   * and stops instead of interleaving. Returns whether it saved.
   */
  advance(from: SyncCheckpoint, to: CheckpointProgress): Promise<boolean>;
  /** Marks the pass complete (same guard as `advance`); returns the row as saved, or undefined if it lost. */
  complete(from: SyncCheckpoint, to: CheckpointProgress): Promise<SyncCheckpoint | undefined>;
  /**
   * Ends the pass without completing it (same guard as `advance`): it stops counting as running,
   * and `lastCompleteAt` is kept, so nothing reads it as a complete walk. For a page the API can
   * never answer readably (the pass would otherwise resume at it, and fail, forever), and for a
   * full pass a whole-list backfill read again since it began.
   */
  giveUp(from: SyncCheckpoint): Promise<SyncCheckpoint | undefined>;
  /**
   * Marks the workers alive now (sync_liveness, the database's clock) and answers the mark it
   * replaced: undefined the first time ever. The row locked first: of several workers
   * marking at once, only the first sees the old mark. Not scoped to the account: the mark is the
   * workers', which serve every account.
   */
  markAlive(): Promise<{ previous: Date | undefined; now: Date }>;
}

/** The one mark of sync_liveness: the workers', not a company's. */
const WORKERS_MARK = "workers";

function fromRow(row: Selectable<DatabaseSchema["sync_checkpoints"]>): SyncCheckpoint {
  return {
    tier: row.tier as CheckpointTier,
    kind: row.kind,
    cursor: row.cursor,
    passStartedAt: row.pass_started_at,
    passCompletedAt: row.pass_completed_at,
    records: Number(row.records),
    pages: row.pages,
    firstImport: row.first_import,
    since: row.since,
    lastCompleteAt: row.last_complete_at,
    updatedAt: row.updated_at,
    guard: row.cursor_guard ?? null,
  };
}

/**
 * The checkpoints in PostgreSQL (migrations.ts, 0007_sync_checkpoints): one
 * statement each, the database's clock for every timestamp so workers on other hosts agree.
 */
export function createSyncCheckpoints(
  db: Kysely<DatabaseSchema>,
  /** `account`: the company whose walks these are; default DEFAULT_ACCOUNT. */
  options: { account?: string } = {},
): SyncCheckpoints {
  const account = options.account ?? DEFAULT_ACCOUNT;
  const table = db.selectFrom("sync_checkpoints").selectAll().where("account_id", "=", account);
  // The database's clock, as every time here is taken.
  const now = sql<Date>`clock_timestamp()`;
  const samePass = (from: SyncCheckpoint) =>
    db
      .updateTable("sync_checkpoints")
      .where("account_id", "=", account)
      .where("tier", "=", from.tier)
      .where("kind", "=", from.kind)
      .where("pass_started_at", "=", from.passStartedAt)
      .where("pass_completed_at", "is", null)
      .where(sql<boolean>`cursor is not distinct from ${from.cursor}`);
  /** Ends the pass `from` started (same guard as `advance`): the row as saved, or undefined if it lost. */
  const endPass = async (from: SyncCheckpoint, values: Record<string, unknown>) => {
    const row = await samePass(from)
      .set({ cursor: null, cursor_guard: null, pass_completed_at: now, updated_at: now, ...values } as never)
      .returningAll()
      .executeTakeFirst();
    return row && fromRow(row);
  };
  return {
    account,
    async get(tier, kind) {
      const row = await table.where("tier", "=", tier).where("kind", "=", kind).executeTakeFirst();
      return row && fromRow(row);
    },
    async list(tier) {
      return (await (tier ? table.where("tier", "=", tier) : table).orderBy("kind").execute()).map(fromRow);
    },
    async start(tier, kind, { firstImport, since = null }) {
      const values = {
        cursor: null,
        cursor_guard: null,
        // Whole milliseconds: the pass is named by it (advance's guard), and a JS Date holds no finer.
        pass_started_at: sql<Date>`date_trunc('milliseconds', clock_timestamp())`,
        pass_completed_at: null,
        records: 0,
        pages: 0,
        first_import: firstImport,
        since,
        updated_at: now,
      };
      const row = await db
        .insertInto("sync_checkpoints")
        .values({ account_id: account, tier, kind, ...values })
        .onConflict((oc) => oc.columns(["account_id", "tier", "kind"]).doUpdateSet(values))
        .returningAll()
        .executeTakeFirstOrThrow();
      return fromRow(row);
    },
    async advance(from, to) {
      const result = await samePass(from)
        .set({
          cursor: to.cursor,
          cursor_guard: to.guard === undefined ? null : JSON.stringify(to.guard),
          records: to.records,
          pages: to.pages,
          updated_at: now,
        } as never)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    },
    complete: (from, to) => endPass(from, { records: to.records, pages: to.pages, last_complete_at: now }),
    giveUp: (from) => endPass(from, {}),
    async markAlive() {
      return db.transaction().execute(async (tx) => {
        // Locked first: a second worker waits here, then reads the mark this one leaves.
        const previous = await tx
          .selectFrom("sync_liveness")
          .select("seen_at")
          .where("name", "=", WORKERS_MARK)
          .forUpdate()
          .executeTakeFirst();
        const row = await tx
          .insertInto("sync_liveness")
          .values({ name: WORKERS_MARK, seen_at: now })
          .onConflict((oc) => oc.column("name").doUpdateSet({ seen_at: sql<Date>`excluded.seen_at` }))
          .returning("seen_at")
          .executeTakeFirstOrThrow();
        return { previous: previous?.seen_at, now: row.seen_at };
      });
    },
  };
}

/** Every checkpoint of each of `accounts`, in one read (GET /accounts: each account's sync state). */
export async function checkpointsByAccount(
  db: Kysely<DatabaseSchema>,
  accounts: readonly string[],
): Promise<Map<string, SyncCheckpoint[]>> {
  const by = new Map<string, SyncCheckpoint[]>(accounts.map((a) => [a, []]));
  if (accounts.length === 0) return by;
  const rows = await db.selectFrom("sync_checkpoints").selectAll().where("account_id", "in", accounts).orderBy("kind").execute();
  for (const row of rows) by.get(row.account_id)?.push(fromRow(row));
  return by;
}
