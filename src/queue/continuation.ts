import type { JobsOptions } from "bullmq";
import { drawRetryDelay, type AttemptResult } from "./attempt-runner.js";
import type { EventJobData } from "./event-job.js";
import { eventBackoff } from "./job-options.js";
import { entryJobIdentity } from "./stream-entry.js";

/** An events queue job that carries an event on after its first attempt. */
export interface ContinuationJob {
  name: string;
  data: EventJobData;
  opts: JobsOptions;
}

export interface ContinuationOptions {
  attempts: number;
  backoffMs: number;
  dedupTtlMs: number;
  /** The keys of every handler of the event's type (the registry's). */
  handlerKeys(type: string): string[];
}

/**
 * Where the next attempt of an event comes from after its first attempt on the stream: the
 * events queue, as
 * - a retry of the handlers that failed, with the rest of the backoff (`retried`);
 * - a dead letter: a job that fails at once with the reason, for `replay`, which runs the
 *   handlers that failed, or every handler when none ran (`failed`);
 * - a job that runs the handlers that did not succeed and records the outcomes of those that did,
 *   which it carries (`unrecorded`: the consumer stopped while the log was away);
 * and none otherwise. Each job carries the entry's identity (entryJobIdentity), so a consumer
 * that dies after adding it and before acknowledging the entry adds nothing twice.
 */
export function continuationOf(
  entryId: string,
  data: EventJobData,
  result: AttemptResult,
  options: ContinuationOptions,
): ContinuationJob | undefined {
  // A retry waits what its attempt recorded as the next retry's time.
  const firstDelayMs = result.outcome === "retried" ? result.retryDelayMs : undefined;
  const job = (only: string[] | undefined, extra: Pick<EventJobData, "unrecorded" | "deadLetter" | "deadLetterStack"> = {}) => ({
    name: data.type,
    data: { ...data, ...(only ? { only } : {}), attemptsBefore: 1, ...extra },
    opts: {
      ...(extra.deadLetter !== undefined
        ? { attempts: 1 }
        : options.attempts <= 1
          ? { attempts: 1, delay: options.backoffMs }
          : {
              // The rest of the run (attemptOfJob numbers the job's attempts on from the stream's),
              // each retry's wait drawn for its number in the run; the first as attempt 1 drew it.
              attempts: options.attempts - 1,
              delay: firstDelayMs ?? drawRetryDelay(eventBackoff(options.backoffMs), 1),
              backoff: eventBackoff(options.backoffMs),
            }),
      ...entryJobIdentity(entryId, options.dedupTtlMs),
    },
  });
  switch (result.outcome) {
    case "retried":
      return job(result.retry);
    case "failed":
      // An empty `only` would replay as a no-op recorded `handled`.
      return job(result.failed.length > 0 ? result.failed : undefined, {
        deadLetter: result.error.message,
        ...(result.stacks ? { deadLetterStack: result.stacks } : {}),
      });
    case "unrecorded":
      return job(
        options.handlerKeys(data.type).filter((k) => result.ok[k] === undefined),
        { unrecorded: result.ok },
      );
    default:
      return undefined;
  }
}
