import { EventLogError } from "../mirror/event-log-error.js";
import type { EventJournal } from "../queue/event-journal.js";

/** Whether the event log takes the worker's attempts: what readiness reports beside a database probe. */
export interface RecordingHealth {
  /** The journal to hand the stream consumer and the event worker: the log, watched. */
  journal: EventJournal;
  /** The last record failed for a reason not the event's own, and none succeeded since. */
  failing(): boolean;
}

/**
 * Watches the event log's writes. A probe alone misses a database that answers `select 1` but
 * cannot write (the embedded store on a full disk), and on the embedded store a probe would wait
 * behind whatever query holds its one connection; the outcome of the last real write needs neither.
 */
export function watchRecording(journal: EventJournal): RecordingHealth {
  let failing = false;
  return {
    journal: {
      async recordAttempt(attempt) {
        try {
          await journal.recordAttempt(attempt);
          failing = false;
        } catch (err) {
          // An event the log can never store says nothing about the database.
          if (!(err instanceof EventLogError && err.code === "invalid_event")) failing = true;
          throw err;
        }
      },
    },
    failing: () => failing,
  };
}
