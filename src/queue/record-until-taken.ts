import type { Logger } from "pino";
import { errorMessage } from "../events/dispatch.js";
import { isRefusedAttempt, type EventAttempt, type EventJournal } from "./event-journal.js";

/** How recording an attempt ended: taken by the log, refused as the event's own fault, or given up at a stop. */
export type RecordOutcome = "recorded" | "refused" | "stopped";

export interface RecordUntilTakenOptions {
  journal: EventJournal;
  logger: Logger;
  /** The first wait after a failure; doubles up to `maxBackoffMs`. */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** True once the consumer stops: the attempt is then left unrecorded (its entry stays pending). */
  stopping(): boolean;
  /** Waits `ms`, or less when the consumer stops. */
  sleep(ms: number): Promise<void>;
  /** Called when this attempt starts waiting on the log (true) and when it stops waiting (false). */
  onWaiting(waiting: boolean): void;
}

/**
 * Records an attempt whose handlers already ran, holding on to it while the event log cannot take
 * it (server down, disk full, a timeout): the outcomes stay in memory, the handlers are not run
 * again, and the caller keeps the entry's slot and claim, so a consumer whose every slot waits
 * here reads nothing new and the ingest stream grows until the edge pushes back (MAX_BACKLOG).
 * Only a refusal that is the event's own fault (EventLogError `invalid_event`) ends it unrecorded:
 * waiting cannot fix that.
 */
export async function recordUntilTaken(attempt: EventAttempt, options: RecordUntilTakenOptions): Promise<RecordOutcome> {
  const { journal, logger } = options;
  let waitMs = options.backoffMs ?? 100;
  let waiting = false;
  try {
    for (;;) {
      try {
        await journal.recordAttempt(attempt);
        if (waiting) logger.info({ eventId: attempt.id }, "the event log took the held attempt");
        return "recorded";
      } catch (err) {
        if (isRefusedAttempt(err)) {
          logger.warn(
            { eventId: attempt.id, err: errorMessage(err) },
            "the event log refused the event's attempt; the events queue retries it",
          );
          return "refused";
        }
        if (!waiting) {
          waiting = true;
          options.onWaiting(true);
          logger.warn(
            { eventId: attempt.id, err: errorMessage(err) },
            "could not record the event's attempt; holding it until the event log answers",
          );
        }
        if (options.stopping()) return "stopped";
        await options.sleep(waitMs);
        waitMs = Math.min(waitMs * 2, options.maxBackoffMs ?? 5000);
      }
    }
  } finally {
    if (waiting) options.onWaiting(false);
  }
}
