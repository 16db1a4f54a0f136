// What a problem is: one reason the mirror or a handler cannot be right, for one account (or for
// the whole deployment), as the operator API, the console, the CLI and the alerts see it. The
// module that opens and resolves problems (the problem store beside this file) is their one
// home; every other part reports facts to it.

/** The kinds of problem, each with its own rule for opening and resolving (docs/operations.md). */
export const PROBLEM_KINDS = [
  "upstream_unreachable",
  "key_refused",
  "rate_limited",
  "sync_failing",
  "handler_failing",
  "mirror_stale",
] as const;
export type ProblemKind = (typeof PROBLEM_KINDS)[number];

/** Each kind in words, as the CLI and the console say it. */
export const PROBLEM_KIND_WORDS: Record<ProblemKind, string> = {
  upstream_unreachable: "the API does not answer",
  key_refused: "the API refuses the account's key",
  rate_limited: "the API keeps answering 429 beyond the shared budget",
  sync_failing: "a sync job is given up on",
  handler_failing: "a handler fails for good",
  mirror_stale: "a kind of the mirror is not refreshed",
};

/** Whose a problem is, in words: "the deployment" or "account <id>" (the account as given; the reader makes it printable). */
export const whoseProblem = (account: string | null): string => (account === null ? "the deployment" : `account ${account}`);

export const PROBLEM_STATES = ["open", "resolved"] as const;
export type ProblemState = (typeof PROBLEM_STATES)[number];

/** A problem as every reader sees it; times are ISO 8601 strings. */
export interface Problem {
  id: string;
  /** The account it belongs to, or null for what belongs to the deployment (the API's address, the database). */
  account: string | null;
  kind: ProblemKind;
  /** What it is about within its kind: a host, a kind of record, a failure group's key. */
  subject: string;
  state: ProblemState;
  openedAt: string;
  resolvedAt: string | null;
  lastSeenAt: string;
  /** How many times its fault was met since it opened. */
  count: number;
  /** Bounded text naming what failed (method and path, host, errno or status, the message); never a secret. */
  cause: string;
}

/**
 * A problem opening or resolving, as it is announced (alerts). `id` is stable for one transition
 * (the same on every retry and after a restart), so announcing it twice delivers it once.
 */
export interface ProblemTransition {
  id: string;
  type: "problem.opened" | "problem.resolved";
  problem: Problem;
}

/** Announces a transition durably (the alerts' queue); idempotent for one transition id. */
export type AnnounceTransition = (transition: ProblemTransition) => Promise<void>;
