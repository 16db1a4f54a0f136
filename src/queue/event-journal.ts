import type { EventAttempt } from "../mirror/event-log.js";

export type { EventAttempt } from "../mirror/event-log.js";

/**
 * Where the event worker records each attempt at an event once it ends: what it took and what
 * each handler did (the event log in PostgreSQL implements it, group-committing attempts that end
 * together). A rejection is either the event's own fault (isRefusedAttempt: it can never be
 * stored) or the log's (the database is away): the second never fails the event, which waits
 * until the log takes it, so nothing is handled without being recorded.
 */
export interface EventJournal {
  recordAttempt(attempt: EventAttempt): Promise<void>;
}

/** Whether recordAttempt refused the attempt for the event's own fault (code `invalid_event`), not the log's. */
export function isRefusedAttempt(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { code?: unknown }).code === "invalid_event";
}
