import type { Child } from "hono/jsx";
import { DEFAULT_ACCOUNT } from "../../config/defaults.js";
import { printable } from "../../base/text.js";
import { PROBLEM_KIND_WORDS, type Problem, whoseProblem } from "../../problems/problem.js";
import { CONSOLE_PATH } from "../operator-routes.js";
import { hrefWith, Table, When } from "./layout.js";

// The health page's first section: every open problem (problems/), in words, with whose it is,
// since when, its cause and a link to what it is about. It leads the page because a figure that
// reads OK says nothing of a key the API refuses or a handler that fails for good.

/** Where a problem's subject is shown: the account's failures, the kind's mirror; none for the API's host. */
function linkOf(problem: Problem): string | undefined {
  const account = problem.account ?? DEFAULT_ACCOUNT;
  switch (problem.kind) {
    case "handler_failing":
    case "sync_failing":
    case "key_refused":
    case "rate_limited":
      return hrefWith(`${CONSOLE_PATH}/failures`, {}, account);
    case "mirror_stale":
      return hrefWith(`${CONSOLE_PATH}/mirror/${encodeURIComponent(problem.subject)}`, {}, account);
    case "upstream_unreachable":
      return undefined;
  }
}

/** The open problems, or a line saying there is none, or that they could not be read (undefined). */
export function OpenProblems(props: { problems: readonly Problem[] | undefined; now: Date }): Child {
  const { problems } = props;
  if (problems === undefined)
    return (
      <section class="card" data-testid="open-problems">
        <h2>Open problems</h2>
        <p class="bad">The open problems could not be read (the database did not answer in time).</p>
      </section>
    );
  if (problems.length === 0)
    return (
      <section class="card" data-testid="open-problems">
        <h2>Open problems</h2>
        <p class="muted">No open problem.</p>
      </section>
    );
  return (
    <section class="card" data-testid="open-problems">
      <h2>Open problems: {problems.length}</h2>
      <Table columns={["problem", "whose", "since", "cause", ""]}>
        {problems.map((p) => {
          const link = linkOf(p);
          return (
            <tr data-kind={p.kind}>
              <td class="bad">
                {PROBLEM_KIND_WORDS[p.kind]} <span class="muted">({printable(p.subject)})</span>
              </td>
              <td>{printable(whoseProblem(p.account))}</td>
              <td>
                <When at={p.openedAt} now={props.now} />
              </td>
              <td>{printable(p.cause)}</td>
              <td>{link ? <a href={link}>see it</a> : ""}</td>
            </tr>
          );
        })}
      </Table>
    </section>
  );
}
