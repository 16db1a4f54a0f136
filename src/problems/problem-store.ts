import { createHash } from "node:crypto";
import { sql, type Kysely, type Selectable } from "kysely";
import type { DatabaseSchema, ProblemsTable } from "../mirror/database.js";
import { oneLine } from "../base/text.js";
import type { AccountSyncState } from "../sync/first-import.js";
import { PROBLEM_KINDS, type Problem, type ProblemKind, type ProblemState, type ProblemTransition } from "./problem.js";

// The problems table (migrations.ts, 0020_problems): one row per (account, kind, subject), opened,
// counted, resolved and opened again in place, with a mark per transition once it was announced.
// Its statements decide nothing: the tracker beside it (problem-tracker.ts) says when to call them.
// Every statement is guarded by the row's state, so two processes reporting the same fact open
// (or resolve) it once.

/** What names one problem: the deployment's own has account null. */
export interface ProblemKey {
  account: string | null;
  kind: ProblemKind;
  subject: string;
}

/** The most characters of a cause, and of a subject, that are stored (they come from outside). */
const MAX_CAUSE_CHARS = 500;
export const MAX_SUBJECT_CHARS = 300;

/** The stored account of a key: '' for the deployment's. */
const accountColumn = (account: string | null) => account ?? "";

/** The problem's stable id: the same for every opening of (account, kind, subject), in every process. */
export function problemId(key: ProblemKey): string {
  const digest = createHash("sha256")
    .update(`${accountColumn(key.account)}\0${key.kind}\0${key.subject}`)
    .digest("hex");
  return `prb_${digest.slice(0, 20)}`;
}

/** One text for a map of keys. */
export const keyText = (key: ProblemKey): string => `${accountColumn(key.account)}\0${key.kind}\0${key.subject}`;

type Row = Selectable<ProblemsTable>;

function fromRow(row: Row): Problem {
  return {
    id: row.id,
    account: row.account_id === "" ? null : row.account_id,
    kind: row.kind as ProblemKind,
    subject: row.subject,
    state: row.state as ProblemState,
    openedAt: row.opened_at.toISOString(),
    resolvedAt: row.resolved_at?.toISOString() ?? null,
    lastSeenAt: row.last_seen_at.toISOString(),
    count: Number(row.count),
    cause: row.cause,
  };
}

/** The opening of a problem as announced: the problem as it stood when it opened. */
export function openedTransition(problem: Problem): ProblemTransition {
  return {
    id: `${problem.id}.opened.${Date.parse(problem.openedAt)}`,
    type: "problem.opened",
    problem: { ...problem, state: "open", resolvedAt: null },
  };
}

/** The resolution of a problem as announced. */
export function resolvedTransition(problem: Problem): ProblemTransition {
  return { id: `${problem.id}.resolved.${Date.parse(problem.resolvedAt ?? problem.lastSeenAt)}`, type: "problem.resolved", problem };
}

/** What GET /problems and `svc-webhooks problems` select: every account's without `account`. */
export interface ProblemQuery {
  state?: ProblemState | "all";
  /** An account's id, or "" for the deployment's own. */
  account?: string;
  kind?: ProblemKind;
  /** @defaultValue 200 */
  limit?: number;
}

export interface ProblemStore {
  /**
   * Opens the problem (a new row, or a resolved one opened again); when it is open already, counts
   * the fault on it. `opened` says whether this call opened it (only one caller of many does).
   */
  open(key: ProblemKey, fault: { cause: string; count: number }): Promise<{ problem: Problem; opened: boolean }>;
  /** Counts faults seen on an open problem since the last call; undefined when it is no longer open. */
  touch(key: ProblemKey, fault: { cause: string; count: number }): Promise<Problem | undefined>;
  /** Resolves the problem if it is open; undefined when it was not (another process resolved it). */
  resolve(key: ProblemKey): Promise<Problem | undefined>;
  /** The open problems (every account's). */
  listOpen(): Promise<Problem[]>;
  list(query?: ProblemQuery): Promise<Problem[]>;
  /** Transitions not yet marked announced, oldest first: each opening, then each resolution. */
  unannounced(limit?: number): Promise<ProblemTransition[]>;
  /** Marks the transition announced (idempotent; a later opening of the same problem is left alone). */
  markAnnounced(transition: ProblemTransition): Promise<void>;
}

type Db = Kysely<DatabaseSchema>;

/** The row's key columns. */
const columnsOf = (key: ProblemKey) => ({ account_id: accountColumn(key.account), kind: key.kind, subject: key.subject });
const boundedCause = (text: string) => oneLine(text, MAX_CAUSE_CHARS);
// Whole milliseconds: a transition's id and its mark name the time as JavaScript holds it.
const NOW = sql<Date>`date_trunc('milliseconds', clock_timestamp())`;

/** An update of the problem's row (by its key). */
const updateRow = (db: Db, key: ProblemKey) => {
  const k = columnsOf(key);
  return db.updateTable("problems").where("account_id", "=", k.account_id).where("kind", "=", k.kind).where("subject", "=", k.subject);
};

/** Counts faults on the open row; undefined when it is not open. */
async function countOn(db: Db, key: ProblemKey, fault: { cause: string; count: number }): Promise<Problem | undefined> {
  const row = await updateRow(db, key)
    .set({ count: sql`count + ${fault.count}`, last_seen_at: NOW, cause: boundedCause(fault.cause) })
    .where("state", "=", "open")
    .returningAll()
    .executeTakeFirst();
  return row && fromRow(row);
}

/** ProblemStore.open: a resolved row opened again, else a new row, else the fault counted on the open one. */
async function openProblem(
  db: Db,
  key: ProblemKey,
  fault: { cause: string; count: number },
): Promise<{ problem: Problem; opened: boolean }> {
  const cause = boundedCause(fault.cause);
  // A resolved row opens again in place (its marks cleared: this opening is announced anew).
  const reopened = await updateRow(db, key)
    .set({
      state: "open",
      opened_at: NOW,
      resolved_at: null,
      last_seen_at: NOW,
      count: fault.count,
      cause,
      opened_announced_at: null,
      resolved_announced_at: null,
    })
    .where("state", "=", "resolved")
    .returningAll()
    .executeTakeFirst();
  if (reopened) return { problem: fromRow(reopened), opened: true };
  const inserted = await db
    .insertInto("problems")
    .values({ ...columnsOf(key), id: problemId(key), state: "open", opened_at: NOW, last_seen_at: NOW, count: fault.count, cause })
    .onConflict((oc) => oc.columns(["account_id", "kind", "subject"]).doNothing())
    .returningAll()
    .executeTakeFirst();
  if (inserted) return { problem: fromRow(inserted), opened: true };
  // Open already (another process, or before a restart): the fault counts on it.
  const counted = await countOn(db, key, fault);
  if (counted) return { problem: counted, opened: false };
  // Resolved between the two statements: open it again.
  return openProblem(db, key, fault);
}

/** ProblemStore.unannounced. */
async function unannounced(db: Db, limit: number): Promise<ProblemTransition[]> {
  const rows = await db
    .selectFrom("problems")
    .selectAll()
    .where((eb) =>
      eb.or([eb("opened_announced_at", "is", null), eb.and([eb("state", "=", "resolved"), eb("resolved_announced_at", "is", null)])]),
    )
    .orderBy("opened_at")
    .limit(limit)
    .execute();
  return rows.flatMap((row) => {
    const problem = fromRow(row);
    const transitions: ProblemTransition[] = [];
    if (row.opened_announced_at === null) transitions.push(openedTransition(problem));
    if (problem.state === "resolved" && row.resolved_announced_at === null) transitions.push(resolvedTransition(problem));
    return transitions;
  });
}

/** ProblemStore.markAnnounced: only the transition announced; a later opening (another opened_at) is announced on its own. */
async function markAnnounced(db: Db, transition: ProblemTransition): Promise<void> {
  const { problem } = transition;
  const row = updateRow(db, problem);
  if (transition.type === "problem.opened")
    await row
      .set({ opened_announced_at: NOW })
      .where("opened_at", "=", new Date(problem.openedAt))
      .where("opened_announced_at", "is", null)
      .execute();
  else if (problem.resolvedAt !== null)
    await row
      .set({ resolved_announced_at: NOW })
      .where("resolved_at", "=", new Date(problem.resolvedAt))
      .where("resolved_announced_at", "is", null)
      .execute();
}

export function createProblemStore(db: Db): ProblemStore {
  return {
    open: (key, fault) => openProblem(db, key, fault),
    touch: (key, fault) => countOn(db, key, fault),
    async resolve(key) {
      const row = await updateRow(db, key)
        .set({ state: "resolved", resolved_at: NOW, resolved_announced_at: null })
        .where("state", "=", "open")
        .returningAll()
        .executeTakeFirst();
      return row && fromRow(row);
    },
    async listOpen() {
      return (await db.selectFrom("problems").selectAll().where("state", "=", "open").execute()).map(fromRow);
    },
    async list(query = {}) {
      let q = db.selectFrom("problems").selectAll();
      const state = query.state ?? "open";
      if (state !== "all") q = q.where("state", "=", state);
      if (query.account !== undefined) q = q.where("account_id", "=", query.account);
      if (query.kind !== undefined) q = q.where("kind", "=", query.kind);
      // Open ones first (newest opening first), then the resolved, newest resolution first.
      const rows = await q
        .orderBy(sql`state = 'open'`, "desc")
        .orderBy(sql`coalesce(resolved_at, opened_at)`, "desc")
        .orderBy("id")
        .limit(query.limit ?? 200)
        .execute();
      return rows.map(fromRow);
    },
    unannounced: (limit = 100) => unannounced(db, limit),
    markAnnounced: (transition) => markAnnounced(db, transition),
  };
}

/**
 * Each account with its sync state, `key_refused` while that problem of the account is open (one
 * read for every account): what `GET /accounts` and `accounts list` show.
 */
export async function withKeyRefused<A extends { id: string; sync: AccountSyncState }>(
  db: Kysely<DatabaseSchema>,
  accounts: readonly A[],
): Promise<A[]> {
  if (accounts.length === 0) return [];
  const refused = await db
    .selectFrom("problems")
    .select("account_id")
    .where("kind", "=", "key_refused")
    .where("state", "=", "open")
    .where(
      "account_id",
      "in",
      accounts.map((a) => a.id),
    )
    .execute();
  const ids = new Set(refused.map((r) => r.account_id));
  return accounts.map((a) => (ids.has(a.id) ? { ...a, sync: { ...a.sync, state: "key_refused" } } : a));
}

/** Whether `text` names a kind of problem. */
export const isProblemKind = (text: string): text is ProblemKind => (PROBLEM_KINDS as readonly string[]).includes(text);
