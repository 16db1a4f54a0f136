import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { alertMessage, slackText, testTransition } from "../../src/alerts/alert-message.js";
import { describeAnswer } from "../../src/alerts/alert-post.js";
import { alertJobId } from "../../src/queue/job-ids.js";

// The spec's own key (test/unit/standard-webhooks.test.ts holds its vector).
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const now = Math.floor(Date.now() / 1000);

describe("a problem notification's message", () => {
  it("is the transition's type and problem, signed over the exact body with the transition id", () => {
    const t = testTransition(new Date("2026-12-02T04:00:00Z"));
    const message = alertMessage(t, { format: "standard", signingSecret: SECRET }, now);
    expect(message.headers["webhook-id"]).toBe(t.id);
    expect(message.headers["webhook-timestamp"]).toBe(String(now));
    expect(new Webhook(SECRET).verify(message.body, message.headers)).toEqual({ type: "problem.opened", data: t.problem });
    // alerts test's marks itself.
    const test = alertMessage(t, { format: "standard", signingSecret: SECRET }, now, true);
    expect(JSON.parse(test.body)).toMatchObject({ test: true });
  });

  it("carries the id and timestamp but no signature without a secret (Slack ignores it)", () => {
    const message = alertMessage(testTransition(), { format: "slack" }, now);
    expect(message.headers["webhook-signature"]).toBeUndefined();
    expect(Object.keys(JSON.parse(message.body) as object)).toEqual(["text"]);
  });

  it("writes Slack's text with its markup characters escaped, and says a test is a test", () => {
    const t = testTransition(new Date("2026-12-02T04:00:00Z"));
    t.problem.cause = "a <script> & more";
    expect(slackText(t)).toBe(
      "Problem opened: the API does not answer for the deployment (alerts test), since 2026-12-02T04:00:00.000Z. Cause: a &lt;script&gt; &amp; more",
    );
    expect(slackText(t, true)).toMatch(/^Test notification from svc-webhooks alerts test, nothing failed\. Problem opened/);
  });

  it("has one job id per transition and destination, none with a colon (BullMQ refuses them)", () => {
    const ids = [alertJobId("tr:1", undefined), alertJobId("tr:1", "acme"), alertJobId("tr:2", undefined)];
    expect(new Set(ids).size).toBe(3);
    for (const id of ids) expect(id).not.toContain(":");
  });

  it("tells an answer by its host and status or errno, never the path", () => {
    expect(describeAnswer({ destination: "hooks.slack.com", ok: false, status: 404, statusText: "Not Found", said: "no_service" })).toBe(
      "hooks.slack.com answered 404 Not Found: no_service",
    );
    expect(describeAnswer({ destination: "127.0.0.1:9", ok: false, error: "ECONNREFUSED" })).toBe(
      "127.0.0.1:9 did not answer: ECONNREFUSED",
    );
  });
});
