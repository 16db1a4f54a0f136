import { describe, expect, it } from "vitest";
import { continuationOf, type ContinuationOptions } from "../../src/queue/continuation.js";
import type { FirstAttempt } from "../../src/queue/first-attempt.js";

const options: ContinuationOptions = {
  attempts: 5,
  backoffMs: 1000,
  dedupTtlMs: 60_000,
  handlerKeys: () => ["sync:review.created:0", "user:review.created:0", "user:*:0"],
};
const data = { id: "evt_1", type: "review.created", receivedAt: "2026-11-23T00:00:00.000Z", payload: { data: { id: "rev_1" } } };
const attempt = (over: Partial<FirstAttempt>, handlers: FirstAttempt["record"]["handlers"], status: FirstAttempt["record"]["status"]) => ({
  entryId: "1700000000000-0",
  data,
  record: { id: data.id, type: data.type, payload: data.payload, status, handlers },
  started: 0,
  ...over,
});
const identity = { jobId: "1700000000000-0", deduplication: { id: "entry-1700000000000-0", ttl: 60_000 } };

describe("continuationOf: what follows an event's first attempt", () => {
  it("nothing when every handler succeeded and the log took the attempt", () => {
    expect(continuationOf(attempt({}, { "sync:review.created:0": { status: "ok" } }, "handled"), true, options)).toEqual({
      outcome: "completed",
    });
  });

  it("a retry of only the failed handlers, with the attempts left and the first backoff as its delay", () => {
    const a = attempt(
      { retry: ["user:review.created:0"] },
      { "sync:review.created:0": { status: "ok" }, "user:review.created:0": { status: "failed", error: "Error: boom" } },
      "received",
    );
    const { outcome, job } = continuationOf(a, true, options);
    expect(outcome).toBe("retried");
    expect(job?.data).toEqual({ ...data, only: ["user:review.created:0"], attemptsBefore: 1 });
    expect(job?.opts).toMatchObject({ ...identity, attempts: 4, backoff: { type: "exponential", delay: 2000 } });
    expect(job?.opts.delay).toBeGreaterThanOrEqual(500);
    expect(job?.opts.delay).toBeLessThanOrEqual(1000);
  });

  it("a dead letter for a failure no retry can fix: one attempt, the failed handlers, the reason", () => {
    const a = attempt(
      { deadLetter: "user:review.created:0: UnrecoverableError: bad data" },
      { "sync:review.created:0": { status: "ok" }, "user:review.created:0": { status: "failed", error: "bad data" } },
      "failed",
    );
    const { outcome, job } = continuationOf(a, true, options);
    expect(outcome).toBe("failed");
    expect(job?.data).toMatchObject({ only: ["user:review.created:0"], deadLetter: "user:review.created:0: UnrecoverableError: bad data" });
    expect(job?.opts).toEqual({ ...identity, attempts: 1 });
  });

  it("a dead letter from data that fails its schema (no handler ran) replays every handler of the type, not none", () => {
    const a = attempt({ deadLetter: "order.created: data.id: Invalid input" }, {}, "failed");
    const { outcome, job } = continuationOf(a, true, options);
    expect(outcome).toBe("failed");
    expect(job?.data.deadLetter).toBe("order.created: data.id: Invalid input");
    // `only: []` counted every handler done: the replay ran nothing and was recorded handled.
    expect(job?.data.only).toBeUndefined();
  });

  it("deduplicates on the stream entry, so a sender's retry the edge appended after its window (a new entry) is never dropped", () => {
    const failing = (entryId: string) =>
      continuationOf(
        attempt({ entryId, retry: ["user:review.created:0"] }, { "user:review.created:0": { status: "failed", error: "503" } }, "received"),
        true,
        options,
      ).job?.opts.deduplication?.id;
    // The same event accepted twice (its first copy's window over at the edge): two entries, two jobs.
    expect(failing("1700000000000-0")).not.toBe(failing("1700000061000-0"));
    // One entry moved twice (a consumer died before its acknowledgement): one job.
    expect(failing("1700000000000-0")).toBe(failing("1700000000000-0"));
  });

  it("when the log refused the attempt: every handler that did not succeed runs again, the successes travel as unrecorded", () => {
    const a = attempt(
      { deadLetter: "user:review.created:0: bad data" },
      { "sync:review.created:0": { status: "ok" }, "user:review.created:0": { status: "failed", error: "bad data" } },
      "failed",
    );
    const { outcome, job } = continuationOf(a, false, options);
    expect(outcome).toBe("retried");
    expect(job?.data).toMatchObject({
      only: ["user:review.created:0", "user:*:0"],
      unrecorded: { "sync:review.created:0": { status: "ok" } },
      attemptsBefore: 1,
    });
    expect(job?.data.deadLetter).toBeUndefined();
    expect(job?.opts).toMatchObject({ ...identity, attempts: 4 });
  });

  it("with one attempt configured, an unrecorded attempt still gets one job to record it", () => {
    const a = attempt({}, { "sync:review.created:0": { status: "ok" } }, "handled");
    expect(continuationOf(a, false, { ...options, attempts: 1 }).job?.opts).toEqual({ ...identity, attempts: 1, delay: 1000 });
  });
});
