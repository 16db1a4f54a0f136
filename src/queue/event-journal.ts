import type { EventAttempt } from "../mirror/event-log.js";

export type { EventAttempt } from "../mirror/event-log.js";

/**
 * Where the event worker records each attempt at an event once it ends: what it took and what
 * each handler did (the event log in PostgreSQL implements it, group-committing attempts that end
 * together). A throw fails the job's attempt, so a database that is down makes the job retry:
 * nothing is handled without being recorded.
 */
export interface EventJournal {
  recordAttempt(attempt: EventAttempt): Promise<void>;
}
