// `problems`: every reason the mirror or a handler cannot be right (src/problems/), told as
// sentences (--json: the document GET /problems answers). It reads where the other reading
// commands do: the service at --url, else the database the environment names (the running
// service's embedded server, when it holds DATA_DIR).
import { ProblemList } from "../http/operator-schemas.js";
import { loadConfig } from "../config/config.js";
import { printable } from "../base/text.js";
import { PROBLEM_KIND_WORDS, PROBLEM_KINDS, PROBLEM_STATES, type Problem, whoseProblem } from "../problems/problem.js";
import { createProblemStore, isProblemKind, type ProblemQuery } from "../problems/problem-store.js";
import { type Answer, answer, type Command, didYouMean, flagOptions, parseFlags, plural, UsageError } from "./command.js";
import { openMigratedStorage, operatorClient } from "./operator.js";

const STATES = [...PROBLEM_STATES, "all"] as const;

const help = `svc-webhooks problems [--state open|resolved|all] [--account <id>] [--kind <kind>] [--url <url>] [--json]

Lists the problems: each reason the mirror or a handler cannot be right, with its account (or the
deployment's own), since when, how often its fault was met and its cause. Open ones by default;
--state resolved or all for the rest, newest first. Kinds: ${PROBLEM_KINDS.join(", ")}
(docs/operations.md, "Problems and alerts", says when each opens and resolves). --json prints the
document GET /problems answers. It reads the service at --url (with ADMIN_TOKEN), else the
database the environment names.`;

/** How long from `fromIso` to `toMs`, in its largest unit. */
function lasted(fromIso: string, toMs: number): string {
  const s = Math.max(0, Math.round((toMs - Date.parse(fromIso)) / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  if (s < 86_400) return `${Math.round(s / 360) / 10} h`;
  return `${Math.round(s / 8640) / 10} d`;
}

/** One problem as a sentence. */
function sayProblem(p: Problem, now: number): string {
  const what = `${p.kind} of ${printable(whoseProblem(p.account))} (${printable(p.subject)}): ${PROBLEM_KIND_WORDS[p.kind]}`;
  const seen = `seen ${plural(p.count, "time")}, last ${p.lastSeenAt}`;
  const when =
    p.state === "open" || p.resolvedAt === null
      ? `open since ${p.openedAt} (${lasted(p.openedAt, now)})`
      : `resolved ${p.resolvedAt} after ${lasted(p.openedAt, Date.parse(p.resolvedAt))}`;
  return `${when}: ${what}; ${seen}; cause: ${printable(p.cause)}`;
}

/** The list as lines: a count, then one line each. */
export function sayProblems(problems: readonly Problem[], query: ProblemQuery, now: number = Date.now()): string {
  const state = query.state ?? "open";
  const noun = state === "all" ? "problem" : `${state} problem`;
  const scope = [
    query.account === undefined ? "" : ` of account ${query.account}`,
    query.kind === undefined ? "" : ` of kind ${query.kind}`,
  ].join("");
  if (problems.length === 0) return `no ${noun}${scope}`;
  return [`${plural(problems.length, noun)}${scope}:`, ...problems.map((p) => `  ${sayProblem(p, now)}`)].join("\n");
}

/** The flags as a query, each value checked (one line naming the flag otherwise). */
function queryOf(values: { state?: string | undefined; account?: string | undefined; kind?: string | undefined }): ProblemQuery {
  const { state, account, kind } = values;
  if (state !== undefined && !(STATES as readonly string[]).includes(state))
    throw new UsageError(`--state takes ${STATES.join(", ")}, not "${printable(state)}"${didYouMean(state, STATES)}`);
  if (kind !== undefined && !isProblemKind(kind))
    throw new UsageError(`--kind takes ${PROBLEM_KINDS.join(", ")}, not "${printable(kind)}"${didYouMean(kind, PROBLEM_KINDS)}`);
  if (account !== undefined && !/^[a-z0-9][a-z0-9-]{0,62}$/.test(account))
    throw new UsageError(`--account takes an account id (a slug: a-z, 0-9 and -), not "${printable(account)}"`);
  return {
    ...(state === undefined ? {} : { state: state as ProblemQuery["state"] }),
    ...(account === undefined ? {} : { account }),
    ...(kind === undefined ? {} : { kind }),
  };
}

async function runProblems(argv: string[], env: NodeJS.ProcessEnv): Promise<Answer> {
  const { values, positionals } = parseFlags({
    args: argv,
    options: flagOptions(["url", "state", "account", "kind"]),
    strict: true,
    allowPositionals: true,
  });
  if (positionals.length > 0)
    throw new UsageError(`problems takes flags only, not "${printable(positionals[0] ?? "")}" (--help lists them)`);
  const query = queryOf(values);
  let problems: Problem[];
  if (values.url !== undefined) {
    const params = new URLSearchParams(query as Record<string, string>).toString();
    problems = (await operatorClient(values.url, env).call("GET", `/problems${params ? `?${params}` : ""}`, ProblemList)).data;
  } else {
    const storage = await openMigratedStorage(loadConfig({ ...env, ROLE: "worker" }), { attach: true });
    try {
      problems = await createProblemStore(storage.database.db).list(query);
    } finally {
      await storage.close();
    }
  }
  return answer({ data: problems }, sayProblems(problems, query));
}

export const problems: Command = { help, answers: true, run: runProblems };
