import type { JobsOptions } from "bullmq";
import type { EventJobData, HandlerOutcomeData } from "./event-job.js";
import type { FirstAttempt } from "./first-attempt.js";
import { remainingRetryOptions } from "./job-options.js";
import { entryJobIdentity } from "./stream-entry.js";

/** An events queue job that carries an event on after its first attempt. */
export interface ContinuationJob {
  name: string;
  data: EventJobData;
  opts: JobsOptions;
}

export interface Continuation {
  outcome: "completed" | "failed" | "retried";
  /** The job to add, when the event goes on in the events queue. */
  job?: ContinuationJob;
}

export interface ContinuationOptions {
  attempts: number;
  backoffMs: number;
  dedupTtlMs: number;
  /** The keys of every handler of the event's type (the registry's). */
  handlerKeys(type: string): string[];
}

/**
 * What becomes of an event after its first attempt, once the event log did (`recorded`) or did
 * not take that attempt:
 * - unrecorded: a job runs the handlers that did not succeed again (a permanent failure fails
 *   again) and records the outcomes of those that did, which it carries;
 * - a retryable failure: a job retries the handlers that failed, with the rest of the backoff;
 * - failed for good: a job that fails at once with the reason (a dead letter for `replay`, which
 *   runs the handlers that failed, or every handler when none ran);
 * - handled: nothing.
 * Each job carries the entry's identity (entryJobIdentity), so a consumer that dies after adding
 * it and before acknowledging the entry adds nothing twice.
 */
export function continuationOf(attempt: FirstAttempt, recorded: boolean, options: ContinuationOptions): Continuation {
  const { data, record } = attempt;
  const job = (
    only: string[] | undefined,
    extra: Pick<EventJobData, "unrecorded" | "deadLetter" | "deadLetterStack"> = {},
  ): ContinuationJob => ({
    name: data.type,
    data: { ...data, ...(only ? { only } : {}), attemptsBefore: 1, ...extra },
    opts: {
      ...(extra.deadLetter !== undefined
        ? { attempts: 1 }
        : (remainingRetryOptions(options.attempts, options.backoffMs) ?? { attempts: 1, delay: options.backoffMs })),
      ...entryJobIdentity(attempt.entryId, options.dedupTtlMs),
    },
  });
  const keysWith = (status: HandlerOutcomeData["status"]) =>
    Object.keys(record.handlers).filter((k) => record.handlers[k]?.status === status);
  if (!recorded) {
    const ok = keysWith("ok");
    const unrecorded = Object.fromEntries(ok.map((k) => [k, { status: "ok" as const }]));
    return {
      outcome: "retried",
      job: job(
        options.handlerKeys(data.type).filter((k) => !ok.includes(k)),
        { unrecorded },
      ),
    };
  }
  if (attempt.retry) return { outcome: "retried", job: job(attempt.retry) };
  // Its replay runs the handlers that failed; when the attempt holds none (a first attempt that
  // ran no handler), every handler of the type: an empty `only` would replay as a no-op recorded
  // `handled`.
  if (attempt.deadLetter !== undefined) {
    const failed = keysWith("failed");
    return {
      outcome: "failed",
      job: job(failed.length > 0 ? failed : undefined, { deadLetter: attempt.deadLetter, deadLetterStack: attempt.deadLetterStack }),
    };
  }
  return { outcome: "completed" };
}
