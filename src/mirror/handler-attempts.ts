import type { Kysely } from "kysely";
import type { DatabaseSchema } from "./database-schema.js";
import { EventLogError } from "./event-log-error.js";

/**
 * How many attempts of one handler of one event the log keeps: the latest 50 by start. Recording
 * one more deletes the older ones in the same statement, so an event replayed in a loop keeps
 * a bounded history (its `attempts` count and each handler's latest outcome still count them all).
 */
export const KEPT_ATTEMPTS_PER_HANDLER = 50;

/**
 * When and how one handler ran in one attempt, as the attempt runner hands it to the event log.
 * Times are milliseconds since the epoch: a job's progress carries runs whose record is pending.
 */
export interface HandlerRun {
  /** The attempt's number in its run: 1 for the run's first (log lines' `attempt`, ctx.attempt); see attempt-runner.ts' attemptOfJob. */
  attempt: number;
  /** N of "attempt n of N": the last attempt this run may reach (JOB_ATTEMPTS for a first delivery or a replay). */
  of: number;
  startedAt: number;
  durationMs: number;
  /** When the next attempt is due: set on a failure that will be retried. */
  nextRetryAt?: number;
}

/** One attempt of one handler, as GET /events/{id} (`handlerAttempts`) and the console's event page show it. */
export interface HandlerAttempt {
  handler: string;
  /** The run the attempt belongs to: 0 for the event's first delivery, k for its k-th replay. */
  replay: number;
  attempt: number;
  of: number;
  startedAt: Date;
  durationMs: number;
  outcome: "ok" | "failed";
  /** The error's text as the handler threw it, bounded (events/error-text.ts). */
  error: string | null;
  /** When the next attempt is (or was) due; null when none followed this one. */
  nextRetryAt: Date | null;
}

/** A run as the recording statement reads it (jsonb_to_recordset in record-attempts.ts). */
export interface RunRow {
  handler: string;
  attempt: number;
  attempts_max: number;
  started_at: string;
  duration_ms: number;
  outcome: "ok" | "failed";
  error: string | null;
  next_retry_at: string | null;
}

const count = (value: unknown, min: number) => typeof value === "number" && Number.isInteger(value) && value >= min && value <= 2 ** 31 - 1;
const instant = (value: unknown) => typeof value === "number" && Number.isFinite(value) && !Number.isNaN(new Date(value).getTime());

/** A handler's run checked (callers may be untyped JavaScript) and shaped for the statement. */
export function runRow(handler: string, outcome: RunRow["outcome"], error: string | undefined, run: HandlerRun): RunRow {
  const { attempt, of, startedAt, durationMs, nextRetryAt } = run;
  if (
    !count(attempt, 1) ||
    !count(of, 1) ||
    !count(durationMs, 0) ||
    !instant(startedAt) ||
    (nextRetryAt !== undefined && !instant(nextRetryAt))
  )
    throw new EventLogError(
      "invalid_event",
      "run",
      "a handler's run has an attempt and an `of` from 1, a duration in whole milliseconds, and epoch-millisecond times",
    );
  return {
    handler,
    attempt,
    attempts_max: of,
    started_at: new Date(startedAt).toISOString(),
    duration_ms: durationMs,
    outcome,
    error: error ?? null,
    next_retry_at: nextRetryAt === undefined ? null : new Date(nextRetryAt).toISOString(),
  };
}

/** Every kept attempt of every handler of an event, by handler key, then run, attempt and start (see the migration's key). */
export async function readHandlerAttempts(db: Kysely<DatabaseSchema>, eventId: string): Promise<HandlerAttempt[]> {
  const rows = await db
    .selectFrom("handler_attempts")
    .select(["handler_key", "replay", "attempt", "attempts_max", "started_at", "duration_ms", "outcome", "error", "next_retry_at"])
    .where("event_id", "=", eventId)
    .orderBy("handler_key")
    .orderBy("replay")
    .orderBy("attempt")
    .orderBy("started_at")
    .execute();
  return rows.map((r) => ({
    handler: r.handler_key,
    replay: r.replay,
    attempt: r.attempt,
    of: r.attempts_max,
    startedAt: r.started_at,
    durationMs: r.duration_ms,
    outcome: r.outcome,
    error: r.error,
    nextRetryAt: r.next_retry_at,
  }));
}
