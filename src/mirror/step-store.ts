import { sql, type Kysely } from "kysely";
import { renameHandlerKeys, type AppliedHandlerKeyRename, type HandlerKeyRename, pruneInBatches } from "./event-log.js";
import { type DatabaseSchema } from "./database.js";
import { DEFAULT_ACCOUNT } from "../config/defaults.js";

/** Which step of which handler of which event. */
export interface StepKey {
  eventId: string;
  handlerKey: string;
  name: string;
}

/** One durable step as the store holds it (GET /events/{id} shows these). */
export interface StepRecord {
  handler: string;
  name: string;
  /** `done`: the result is stored; `failed`: its function threw (it runs again); `started`: running, or its process died. */
  status: "started" | "done" | "failed";
  /** How many times its function was started (above 1: it ran again after a throw or a crash). */
  runs: number;
  /** The attempt of the event that last started it. */
  attempt: number;
  startedAt: Date;
  finishedAt: Date | null;
  /** Of the last run. */
  durationMs: number | null;
  /** Bytes of the stored JSON result (null until done, or when the step returned undefined). */
  resultBytes: number | null;
  error: string | null;
}

/** What `claim` found: a stored result to return, or a run to make (`recovery`: an earlier run did not finish). */
type StepClaim = { state: "done"; json: string | undefined } | { state: "run"; recovery: boolean; startedAt: Date };

export interface StepStore {
  /** The account (company) whose events' steps this store holds: every query is scoped to it. */
  readonly account: string;
  /**
   * Returns the stored result of a done step; otherwise marks the step started (committed before
   * the step's function runs) and says whether an earlier run started it without finishing.
   */
  claim(key: StepKey, attempt: number): Promise<StepClaim>;
  /**
   * Stores the result (`json` undefined: the step returned undefined) and returns the JSON the
   * step now holds: this one, or that of a concurrent run that was stored first.
   */
  complete(key: StepKey, json: string | undefined, durationMs: number): Promise<string | undefined>;
  /** Notes that the step's function threw; nothing is stored, so it runs again. */
  fail(key: StepKey, error: string, durationMs: number): Promise<void>;
  /** Every step of an event, in the order they started. */
  forEvent(eventId: string): Promise<StepRecord[]>;
  /** Deletes the steps of these events, of one handler when given (replay --fresh); returns how many rows went. */
  forget(eventIds: readonly string[], handlerKey?: string): Promise<number>;
  /** Deletes steps started before `olderThan`, `batchSize` rows per statement; returns how many. */
  prune(olderThan: Date, batchSize?: number): Promise<number>;
  /** Moves steps to their handler's new key, each rename once ever, in every account (event-log.ts). */
  renameHandlerKeys(renames: readonly HandlerKeyRename[]): Promise<AppliedHandlerKeyRename[]>;
}

const MAX_ERROR_LENGTH = 2000;

/**
 * Durable steps in the `steps` table. Each call is one statement (its own transaction), as the
 * event log's writes are: the `started` mark is committed before the step's function runs, the
 * result when it returns.
 */
export function createStepStore(
  db: Kysely<DatabaseSchema>,
  /** `account`: the company whose events' steps these are (event ids are unique only within one); default DEFAULT_ACCOUNT. */
  options: { account?: string } = {},
): StepStore {
  const account = options.account ?? DEFAULT_ACCOUNT;
  // result::text tells a stored jsonb null (the step returned null) from SQL NULL (undefined).
  const storedResult = async ({ eventId, handlerKey, name }: StepKey) => {
    const { rows } = await sql<{ status: string; result: string | null }>`
      select status, result::text as result from steps
      where account_id = ${account} and event_id = ${eventId} and handler_key = ${handlerKey} and name = ${name}`.execute(db);
    return rows[0];
  };

  return {
    account,
    async claim(key, attempt) {
      const { eventId, handlerKey, name } = key;
      // A done step is left as it is (no row returned): its result is read below.
      const { rows } = await sql<{ runs: number; started_at: Date }>`
        insert into steps as s (account_id, event_id, handler_key, name, status, attempt)
        values (${account}, ${eventId}, ${handlerKey}, ${name}, 'started', ${attempt})
        on conflict (account_id, event_id, handler_key, name) do update
          set status = 'started', runs = s.runs + 1, attempt = excluded.attempt, error = null
          where s.status <> 'done'
        returning runs, started_at`.execute(db);
      const row = rows[0];
      if (row) return { state: "run", recovery: row.runs > 1, startedAt: row.started_at };
      const stored = await storedResult(key);
      // Forgotten (replay --fresh) between the two statements: claim it afresh.
      if (stored?.status !== "done") return this.claim(key, attempt);
      return { state: "done", json: stored.result ?? undefined };
    },

    async complete(key, json, durationMs) {
      const { eventId, handlerKey, name } = key;
      const bytes = json === undefined ? null : Buffer.byteLength(json);
      const { rows } = await sql<{ done: boolean }>`
        insert into steps as s (account_id, event_id, handler_key, name, status, attempt, result, result_bytes, finished_at, duration_ms)
        values (${account}, ${eventId}, ${handlerKey}, ${name}, 'done', 0, ${json ?? null}::jsonb, ${bytes}, clock_timestamp(), ${Math.round(durationMs)})
        on conflict (account_id, event_id, handler_key, name) do update
          set status = 'done', result = excluded.result, result_bytes = excluded.result_bytes,
              finished_at = excluded.finished_at, duration_ms = excluded.duration_ms, error = null
          where s.status <> 'done'
        returning true as done`.execute(db);
      if (rows.length > 0) return json;
      // Another run of the same step stored its result first: every caller returns that one.
      const stored = await storedResult(key);
      return stored?.result ?? undefined;
    },

    async fail({ eventId, handlerKey, name }, error, durationMs) {
      await sql`
        update steps set status = 'failed', error = ${error.slice(0, MAX_ERROR_LENGTH)},
          finished_at = clock_timestamp(), duration_ms = ${Math.round(durationMs)}
        where account_id = ${account} and event_id = ${eventId} and handler_key = ${handlerKey} and name = ${name}
          and status <> 'done'`.execute(db);
    },

    async forEvent(eventId) {
      const { rows } = await sql<StepRecord>`
        select handler_key as handler, name, status, runs, attempt, started_at as "startedAt", finished_at as "finishedAt",
          duration_ms as "durationMs", result_bytes as "resultBytes", error
        from steps where account_id = ${account} and event_id = ${eventId} order by started_at, handler_key, name`.execute(db);
      return rows;
    },

    async forget(eventIds, handlerKey) {
      if (eventIds.length === 0) return 0;
      const ofHandler = handlerKey === undefined ? sql`` : sql`and handler_key = ${handlerKey}`;
      const result =
        await sql`delete from steps where account_id = ${account} and event_id = any(${[...eventIds]}::text[]) ${ofHandler}`.execute(db);
      return Number(result.numAffectedRows ?? 0);
    },

    renameHandlerKeys: (renames) => renameHandlerKeys(db, renames),

    prune(olderThan, batchSize = 500) {
      return pruneInBatches(olderThan, batchSize, async (limit) => {
        const result = await sql`
          delete from steps where ctid in (
            select ctid from steps where account_id = ${account} and started_at < ${olderThan}
            order by started_at limit ${limit} for update skip locked
          )`.execute(db);
        return Number(result.numAffectedRows ?? 0);
      });
    },
  };
}
