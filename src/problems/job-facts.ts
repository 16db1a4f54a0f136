import { outcomeFingerprint } from "../mirror/event-log.js";
import { UpstreamError } from "../upstream/errors.js";
import type { ProblemTracker } from "./problem-tracker.js";

// What the workers' jobs tell the problem tracker (the rules of docs/operations.md, "Problems and
// alerts"):
// - sync_failing (the account's, subject the job's name): a sync job given up on for a reason the
//   upstream kinds do not already name (no answer, a 5xx, a refused key, 429s); the next run of
//   that job for that account that completes resolves it.
// - handler_failing (the account's, subject "<handler>: <error fingerprint>", the failures page's
//   group): an event given up on with that handler failed with an error of that fingerprint; the
//   handler's next success resolves every group of it.

/** The cause of a sync job's failure: the upstream error it carries, when one is named there. */
const upstreamCause = (err: Error): unknown => (err instanceof UpstreamError ? err : (err as { cause?: unknown }).cause);

/** Whether an upstream kind names this failure already (upstream-facts.ts reported it when the call failed). */
function upstreamNamesIt(err: Error): boolean {
  const cause = upstreamCause(err);
  if (!(cause instanceof UpstreamError)) return false;
  const { status } = cause;
  return status === undefined || status >= 500 || status === 401 || status === 403 || status === 429;
}

/** A sync job failed for good (no retry follows). */
export function syncJobGivenUp(tracker: ProblemTracker, job: { name: string; account: string; id?: string | undefined }, err: Error): void {
  if (upstreamNamesIt(err)) return;
  tracker.report({
    account: job.account,
    kind: "sync_failing",
    subject: job.name,
    cause: `sync job ${job.name}${job.id === undefined ? "" : ` ${job.id}`} given up: ${err.message.split("\n")[0] ?? ""}`,
  });
}

/** A sync job completed. */
export function syncJobCompleted(tracker: ProblemTracker, job: { name: string; account: string }): void {
  tracker.cleared({ account: job.account, kind: "sync_failing", subject: job.name });
}

/** The subject of a failure group's problem: its handler and its error's fingerprint. */
const failureGroupSubject = (handler: string, error: string): string => `${handler}: ${outcomeFingerprint(error)}`;

/** An attempt at an event the log recorded: each handler's outcome, and whether the event was given up on. */
export function handlerOutcomes(
  tracker: ProblemTracker,
  attempt: {
    account: string;
    id: string;
    type: string;
    status: string;
    handlers: Record<string, { status: string; error?: string | undefined }>;
  },
): void {
  for (const [handler, outcome] of Object.entries(attempt.handlers)) {
    if (outcome.status === "ok") {
      tracker.clearedWhere({ account: attempt.account, kind: "handler_failing", subjectPrefix: `${handler}: ` });
      continue;
    }
    if (attempt.status !== "failed" || outcome.error === undefined) continue;
    tracker.report({
      account: attempt.account,
      kind: "handler_failing",
      subject: failureGroupSubject(handler, outcome.error),
      cause: `handler ${handler} failed for good on event ${attempt.id} (${attempt.type}): ${outcome.error.split("\n")[0] ?? ""}`,
    });
  }
}
