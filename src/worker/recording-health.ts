import { EventLogError } from "../mirror/errors.js";
import type { AttemptLog } from "../queue/attempt-runner.js";

/** Whether the event log takes the worker's attempts: what readiness reports beside a database probe. */
export interface RecordingHealth {
  /** The log to hand the attempt runner: the event log, watched. */
  eventLog: AttemptLog;
  /** The last call (a write, or the look-up of a delivery) failed for a reason not the event's own, and none succeeded since. */
  failing(): boolean;
}

/**
 * Watches the event log's writes. A probe alone misses a database that answers `select 1` but
 * cannot write (the embedded store on a full disk), and on the embedded store a probe would wait
 * behind whatever query holds its one connection; the outcome of the last real write needs neither.
 */
export function watchRecording(eventLog: AttemptLog): RecordingHealth {
  let failing = false;
  const watched = async <T>(call: Promise<T>): Promise<T> => {
    try {
      const answer = await call;
      failing = false;
      return answer;
    } catch (err) {
      // An event the log can never store says nothing about the database.
      if (!(err instanceof EventLogError && err.code === "invalid_event")) failing = true;
      throw err;
    }
  };
  return {
    eventLog: {
      recordAttempt: (attempt) => watched(eventLog.recordAttempt(attempt)),
      holds: (id) => watched(eventLog.holds(id)),
    },
    failing: () => failing,
  };
}
