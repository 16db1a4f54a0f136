import { sql, type Kysely } from "kysely";
import { boundedErrorText, boundedStack, MAX_ERROR_MESSAGE_CHARS } from "../events/error-text.js";
import type { DatabaseSchema, EventStatus } from "./database-schema.js";
import { errorFingerprint } from "./error-fingerprint.js";
import { EventLogError } from "./event-log-error.js";
import { KEPT_ATTEMPTS_PER_HANDLER, runRow, type HandlerRun, type RunRow } from "./handler-attempts.js";
import { needsEscapedForm, storableText, toEscapedForm } from "./stored-payload.js";

/** What one attempt at an event did, recorded once when the attempt ends. */
export interface EventAttempt {
  id: string;
  type: string;
  /** The payload as delivered; stored on the event's first record only. */
  payload: unknown;
  /** `handled`, `failed` (for good), or `received` (this attempt failed and the job will retry). */
  status: EventStatus;
  /**
   * The outcome of each handler this attempt ran (those done on an earlier attempt are not run
   * again), and of those an earlier attempt ran whose record is pending. Each with a `run` is also
   * a row of the event's handler attempts (handler-attempts.ts).
   */
  handlers: Record<string, { status: "ok" | "failed"; error?: string; stack?: string; run?: HandlerRun }>;
  /**
   * The attempt starts a new round, a run of its own (a replay's first attempt): `events.replays`
   * counts one more, its handler attempts name that run, and its status replaces whatever the log
   * holds. Otherwise a status only moves forward (received → failed → handled), so an attempt
   * whose record lands late never undoes a later one's outcome.
   */
  newRound?: boolean;
}

const STATUSES: readonly string[] = ["received", "handled", "failed"];

/** One attempt as a JSON object of the statement's recordset: validated and serialized per attempt, so one bad payload fails only its own call. */
export interface Row {
  id: string;
  json: string;
}

/** A handler's outcome as `events.handlers` stores it (HandlerOutcome, before its attempts are counted on). */
interface StoredOutcome {
  status: "ok" | "failed";
  error?: string;
  stack?: string;
  fingerprint?: string;
  attempts: 1;
}

export function attemptRow(attempt: EventAttempt): Row {
  const id = checkId(attempt.id);
  checkId(attempt.type, "type");
  if (!STATUSES.includes(attempt.status))
    throw new EventLogError("invalid_event", "status", "an attempt ends received (to be retried), handled or failed");
  const handlers: Record<string, StoredOutcome> = {};
  const runs: RunRow[] = [];
  for (const [key, outcome] of Object.entries(attempt.handlers)) {
    checkId(key, "key");
    // Callers may be untyped JavaScript: check what the type promises.
    const status: unknown = outcome.status;
    if (status !== "ok" && status !== "failed") throw new EventLogError("invalid_event", "status", "a handler outcome is ok or failed");
    const stored: StoredOutcome = { status: outcome.status, attempts: 1 };
    // Error text is free text (a message may quote the payload): bounded, and made storable in jsonb.
    if (outcome.error !== undefined) {
      stored.error = storableText(boundedErrorText(outcome.error, MAX_ERROR_MESSAGE_CHARS));
      stored.fingerprint = errorFingerprint(stored.error);
    }
    if (typeof outcome.stack === "string") stored.stack = storableText(boundedStack(outcome.stack));
    handlers[key] = stored;
    if (outcome.run !== undefined) runs.push(runRow(key, outcome.status, stored.error, outcome.run));
  }
  let json: string | undefined;
  try {
    const row = (payload: unknown) =>
      JSON.stringify({ id, type: attempt.type, status: attempt.status, handlers, runs, payload, new_round: attempt.newRound === true });
    json = row(attempt.payload);
    // jsonb refuses \u0000 and lone surrogates: such a payload is kept as JSON text (stored-payload.ts).
    if (needsEscapedForm(attempt.payload, json)) json = row(toEscapedForm(JSON.stringify(attempt.payload)));
  } catch {
    // a cycle or a BigInt: fall through to the error below
  }
  if (json === undefined || attempt.payload === undefined)
    throw new EventLogError("invalid_event", "payload", "payload must be JSON-serializable");
  return { id, json };
}

/**
 * The rows split into runs in which no id repeats (one INSERT … ON CONFLICT may not touch a row
 * twice), each id's attempts kept in the order they ended.
 */
export function distinctIds(rows: Row[]): Row[][] {
  const parts: { ids: Set<string>; rows: Row[] }[] = [];
  for (const row of rows) {
    let i = parts.length;
    // After the last part already holding this id: its attempts stay in order.
    while (i > 0 && !parts[i - 1]?.ids.has(row.id)) i--;
    const part = parts[i] ?? (parts[i] = { ids: new Set(), rows: [] });
    part.ids.add(row.id);
    part.rows.push(row);
  }
  return parts.map((p) => p.rows);
}

/**
 * One statement for many attempts: the rows travel as one jsonb array. A new event is inserted with
 * each handler's attempts at 1; a known one counts an attempt, takes the new status and merges
 * the outcomes, each handler's attempts counted on from its stored outcome. A stale attempt (one
 * that would lower the status within its round: it ended before the stored one but its record
 * landed after) takes neither the status nor the outcomes of handlers the log already holds.
 * The payload and received_at stay as first recorded.
 *
 * The same statement writes each handler's run as a row of handler_attempts (a run recorded again,
 * after a lost answer, replaces its row: same attempt, same start), numbered with the event's run
 * (a new round counts one more replay first), and keeps that handler's latest
 * KEPT_ATTEMPTS_PER_HANDLER rows by start (the statement sees the rows before it: the latest
 * KEPT_ATTEMPTS_PER_HANDLER - 1 of them stay beside the new one; attempt numbers start again in
 * each run, so they cannot order rows across runs): the hot path's one round trip stays one.
 */
export async function upsertAttempts(db: Kysely<DatabaseSchema>, rows: Row[]): Promise<void> {
  const json = `[${rows.map((r) => r.json).join(",")}]`;
  // The ids of one statement are distinct (distinctIds), so `v` has one row per conflicting id.
  const rank = (status: string) => `array_position(array['received', 'failed', 'handled'], ${status})`;
  const stale = sql.raw(`(not (select v.new_round from v where v.id = excluded.id) and ${rank("excluded.status")} < ${rank("e.status")})`);
  await sql`
    with v as (
      select * from jsonb_to_recordset(${json}::jsonb)
        as v(id text, type text, payload jsonb, status text, handlers jsonb, runs jsonb, new_round boolean)
    ),
    logged as (
      insert into events as e (id, type, payload, status, attempts, handlers, received_at, updated_at)
      select v.id, v.type, v.payload, v.status, 1, v.handlers, date_trunc('milliseconds', clock_timestamp()), clock_timestamp()
      from v
      on conflict (id) do update set
        attempts = e.attempts + 1,
        replays = e.replays + case when (select v.new_round from v where v.id = excluded.id) then 1 else 0 end,
        status = case when ${stale} then e.status else excluded.status end,
        handlers = e.handlers || coalesce((
          select jsonb_object_agg(
            h.key,
            (case when ${stale} then coalesce(e.handlers -> h.key, h.value) else h.value end)
              || jsonb_build_object('attempts', coalesce((e.handlers -> h.key ->> 'attempts')::int, 0) + 1))
          from jsonb_each(excluded.handlers) as h
        ), '{}'::jsonb),
        updated_at = clock_timestamp()
      returning e.id, e.replays
    ),
    r as (
      select v.id as event_id, logged.replays as replay, r.*
      from v join logged on logged.id = v.id cross join lateral jsonb_to_recordset(v.runs) as r(
        handler text, attempt int, attempts_max int, started_at timestamptz, duration_ms int, outcome text, error text, next_retry_at timestamptz)
    ),
    kept as (
      insert into handler_attempts as a (event_id, handler_key, replay, attempt, attempts_max, started_at, duration_ms, outcome, error, next_retry_at)
      select event_id, handler, replay, attempt, attempts_max, started_at, duration_ms, outcome, error, next_retry_at from r
      on conflict (event_id, handler_key, attempt, started_at) do update set
        replay = excluded.replay, attempts_max = excluded.attempts_max, duration_ms = excluded.duration_ms,
        outcome = excluded.outcome, error = excluded.error, next_retry_at = excluded.next_retry_at
    )
    delete from handler_attempts as a using r
    where a.event_id = r.event_id and a.handler_key = r.handler and a.started_at < (
      select b.started_at from handler_attempts as b
      where b.event_id = r.event_id and b.handler_key = r.handler
      order by b.started_at desc offset ${KEPT_ATTEMPTS_PER_HANDLER - 2} limit 1
    )`.execute(db);
}

export function checkId(id: unknown, field = "id"): string {
  if (typeof id !== "string" || id === "" || id.length > 200)
    throw new EventLogError("invalid_event", field, `${field} must be a non-empty string of at most 200 characters`);
  return id;
}
