import type { ApiCallOutcome } from "../upstream/client.js";
import type { ProblemTracker } from "./problem-tracker.js";

// What an upstream call's attempt tells the problem tracker (the rules of docs/operations.md,
// "Problems and alerts"):
// - upstream_unreachable (the deployment's, subject the API's host): a network error, a timeout or
//   a 5xx on the attempt the client gives up after, or on a retry (the second failed attempt of a
//   call in a row: a single blip a retry fixes is no problem); any answer that is not a 5xx
//   resolves it.
// - key_refused (the account's, subject the host): a 401 or 403; a call with that key answered
//   otherwise resolves it.
// - rate_limited (the account's, subject the host): a call still answered 429 after every wait
//   the shared budget and Retry-After allowed (the client gives up); a call answered otherwise
//   resolves it.

const isServerError = (status: number | undefined) => status !== undefined && status >= 500;

/** The cause of an attempt's failure: its message names method, route, host and errno or status. */
const causeOf = (o: ApiCallOutcome) =>
  o.message ?? `${o.method} ${o.route} at ${o.host}: ${o.status !== undefined ? `answered ${o.status}` : (o.errno ?? "failed")}`;

/**
 * The facts of each attempt of calls made for `account` (null: calls of no account yet, such as
 * the key tried before an account is added, whose refusal is no account's problem).
 */
export function upstreamOutcomeReporter(tracker: ProblemTracker, account: string | null): (outcome: ApiCallOutcome) => void {
  return (o) => {
    const host = o.host;
    const unreachable = { account: null, kind: "upstream_unreachable", subject: host } as const;
    if (o.status === undefined || isServerError(o.status)) {
      if (o.final || o.attempt >= 2) tracker.report({ ...unreachable, cause: causeOf(o) });
      return;
    }
    // The API answered.
    tracker.cleared(unreachable);
    if (account === null) return;
    const refused = { account, kind: "key_refused", subject: host } as const;
    const limited = { account, kind: "rate_limited", subject: host } as const;
    if (o.status === 401 || o.status === 403) {
      tracker.report({ ...refused, cause: causeOf(o) });
      return;
    }
    tracker.cleared(refused);
    if (o.status === 429) {
      if (o.final) tracker.report({ ...limited, cause: causeOf(o) });
      return;
    }
    tracker.cleared(limited);
  };
}
