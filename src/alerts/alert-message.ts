// What one problem notification says and how it is signed: the Standard Webhooks body
// (`{"type", "data"}`) or Slack's incoming-webhook text, and the three headers over that body.
// The queue's worker and `alerts test` both send what this writes.
import { randomUUID } from "node:crypto";
import { standardSecretKey, standardWebhookHeaders, STANDARD_WEBHOOK_HEADERS } from "../base/standard-webhooks.js";
import type { ALERT_FORMATS } from "../config/config.js";
import { PROBLEM_KIND_WORDS, type ProblemTransition, whoseProblem } from "../problems/problem.js";

export type AlertFormat = (typeof ALERT_FORMATS)[number];

/** The body of a notification in the Standard Webhooks format: `test` marks one `alerts test` sent. */
export interface StandardAlertBody {
  type: ProblemTransition["type"];
  data: ProblemTransition["problem"];
  test?: true;
}

/** One notification ready to send: its id (`webhook-id`, the same on every attempt), body and headers. */
export interface AlertMessage {
  id: string;
  body: string;
  headers: Record<string, string>;
}

/** How a notification is written: the format, and the Standard Webhooks secret it is signed with (none: unsigned). */
export interface AlertStyle {
  format: AlertFormat;
  signingSecret?: string;
}

/**
 * The message of one transition at `timestampSeconds` (each attempt signs anew with its own time,
 * as the scheme's receivers check the timestamp against their clock; the id stays).
 */
export function alertMessage(transition: ProblemTransition, style: AlertStyle, timestampSeconds: number, test = false): AlertMessage {
  const body = JSON.stringify(
    style.format === "slack"
      ? { text: slackText(transition, test) }
      : ({ type: transition.type, data: transition.problem, ...(test ? { test: true } : {}) } satisfies StandardAlertBody),
  );
  const signed = style.signingSecret
    ? standardWebhookHeaders([standardSecretKey(style.signingSecret)], transition.id, timestampSeconds, body)
    : { [STANDARD_WEBHOOK_HEADERS.id]: transition.id, [STANDARD_WEBHOOK_HEADERS.timestamp]: String(timestampSeconds) };
  return { id: transition.id, body, headers: { "content-type": "application/json", "user-agent": "svc-webhooks-alerts", ...signed } };
}

/** Slack's mrkdwn treats these three as markup; a cause may hold any of them. */
const slackEscaped = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/**
 * The sentence a person reads in Slack: what happened (the kind in words), whose, about what, the
 * cause, and since when (or for how long, once resolved).
 */
export function slackText({ type, problem }: ProblemTransition, test = false): string {
  const about = problem.subject === "" ? "" : ` (${problem.subject})`;
  const head = type === "problem.opened" ? "Problem opened" : "Problem resolved";
  const when =
    type === "problem.opened"
      ? `since ${problem.openedAt}`
      : `open from ${problem.openedAt} to ${problem.resolvedAt ?? problem.lastSeenAt}, seen ${problem.count} ${problem.count === 1 ? "time" : "times"}`;
  const text = `${head}: ${PROBLEM_KIND_WORDS[problem.kind]} for ${whoseProblem(problem.account)}${about}, ${when}. Cause: ${problem.cause}`;
  return slackEscaped(test ? `Test notification from svc-webhooks alerts test, nothing failed. ${text}` : text);
}

/**
 * The notification `alerts test` sends: a `problem.opened` of a problem that is plainly a test
 * (its id and subject say so, and the body carries `"test": true`), so a receiver's handling of a
 * real opening is what it exercises.
 */
export function testTransition(now: Date = new Date()): ProblemTransition {
  const at = now.toISOString();
  const id = `test_${randomUUID()}`;
  return {
    id: `msg_${id}`,
    type: "problem.opened",
    problem: {
      id,
      account: null,
      kind: "upstream_unreachable",
      subject: "alerts test",
      state: "open",
      openedAt: at,
      resolvedAt: null,
      lastSeenAt: at,
      count: 1,
      cause: "a test notification sent by svc-webhooks alerts test; nothing failed",
    },
  };
}
