import { setTimeout as delay } from "node:timers/promises";
import type { Logger } from "pino";
import { errorMessage } from "../events/dispatch.js";
import { EventLogError } from "../mirror/errors.js";

/** How often an attempt waiting for the log looks whether its source stops. */
const STOP_CHECK_MS = 200;

/** The log said no for the event's own fault (it can never be stored): waiting cannot fix that. */
const refusedForGood = (err: unknown) => err instanceof EventLogError && err.code === "invalid_event";

/** What an attempt brings to a wait: its log lines, and whether its source stops. */
export interface WaitingAttempt {
  logger: Logger;
  stopping(): boolean;
}

export interface LogWait {
  /** What `ask` resolved to once the log answered; undefined when the source stopped first. */
  whileLogAway: <T>(attempt: WaitingAttempt, ask: () => Promise<T>) => Promise<{ answer: T } | undefined>;
  /** How many attempts wait for the log now. */
  waiting: () => number;
}

/**
 * The attempt runner's wait for an event log that cannot answer (the database away, its disk
 * full): ask again from `firstWaitMs`, doubling to `maxWaitMs`, until it answers or the source
 * stops. A refusal for the event's own fault is thrown at once.
 */
export function createLogWait(options: { firstWaitMs: number; maxWaitMs: number }): LogWait {
  let waiting = 0;
  return {
    async whileLogAway(a, ask) {
      let wait = options.firstWaitMs;
      let held = false;
      try {
        for (;;) {
          try {
            const answer = await ask();
            if (held) a.logger.info("the event log answered; the held attempt goes on");
            return { answer };
          } catch (err) {
            if (refusedForGood(err)) throw err;
            if (!held) {
              held = true;
              waiting++;
              a.logger.warn({ err: errorMessage(err) }, "could not reach the event log; holding the attempt until the event log answers");
            }
            // Waited in short steps, so a stop is seen within one.
            for (let left = wait; left > 0 && !a.stopping(); left -= STOP_CHECK_MS)
              await delay(Math.min(left, STOP_CHECK_MS), undefined, { ref: false });
            if (a.stopping()) return undefined;
            wait = Math.min(wait * 2, options.maxWaitMs);
          }
        }
      } finally {
        if (held) waiting--;
      }
    },
    waiting: () => waiting,
  };
}
