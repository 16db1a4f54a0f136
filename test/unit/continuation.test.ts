import { UnrecoverableError } from "bullmq";
import { describe, expect, it } from "vitest";
import { attemptOfJob, type AttemptResult, EVENT_BACKOFF } from "../../src/queue/attempt-runner.js";
import { continuationOf, restoredJob, type ContinuationOptions } from "../../src/queue/events-queue.js";

const options: ContinuationOptions = {
  attempts: 5,
  backoffMs: 1000,
  dedupTtlMs: 60_000,
  handlerKeys: () => ["sync:review.created:0", "user:review.created:0", "user:*:0"],
};
const data = { id: "evt_1", type: "review.created", receivedAt: "2026-11-23T00:00:00.000Z", payload: { data: { id: "rev_1" } } };
const ENTRY = "1700000000000-0";
const next = (result: AttemptResult, entryId = ENTRY, over: Partial<ContinuationOptions> = {}) =>
  continuationOf(entryId, data, result, { ...options, ...over });
const identity = { jobId: ENTRY, deduplication: { id: `entry-${ENTRY}`, ttl: 60_000 } };
const retried = (retry: string[]): AttemptResult => ({ outcome: "retried", retry, error: new Error("boom") });

describe("continuationOf: where an event's next attempt comes from after its first, on the stream", () => {
  it("nowhere when every handler succeeded, the delivery was a duplicate, or the consumer stopped before it started", () => {
    expect(next({ outcome: "completed" })).toBeUndefined();
    expect(next({ outcome: "duplicate" })).toBeUndefined();
    expect(next({ outcome: "released" })).toBeUndefined();
  });

  it("a retry of only the failed handlers, with the attempts left and the first backoff as its delay", () => {
    const job = next(retried(["user:review.created:0"]));
    expect(job?.data).toEqual({ ...data, only: ["user:review.created:0"], attemptsBefore: 1 });
    // Each retry's wait is drawn for its attempt's number in the run (2, 3, …) from the same base.
    expect(job?.opts).toMatchObject({ ...identity, attempts: 4, backoff: { type: EVENT_BACKOFF, delay: 1000 } });
    expect(job?.opts.delay).toBeGreaterThanOrEqual(500);
    expect(job?.opts.delay).toBeLessThanOrEqual(1000);
    // It waits the delay its first attempt recorded as the next retry.
    expect(next({ outcome: "retried", retry: ["user:review.created:0"], error: new Error("boom"), retryDelayMs: 777 })?.opts.delay).toBe(
      777,
    );
  });

  it("a dead letter for a failure no retry can fix: one attempt, the failed handlers, the reason and stacks", () => {
    const reason = "user:review.created:0: UnrecoverableError: bad data";
    const job = next({
      outcome: "failed",
      failed: ["user:review.created:0"],
      error: new UnrecoverableError(reason),
      stacks: "[user] at x",
    });
    expect(job?.data).toMatchObject({ only: ["user:review.created:0"], deadLetter: reason, deadLetterStack: "[user] at x" });
    expect(job?.opts).toEqual({ ...identity, attempts: 1 });
  });

  it("a dead letter whose attempt ran no handler replays every handler of the type, not none", () => {
    const job = next({ outcome: "failed", failed: [], error: new UnrecoverableError("order.created: data.id: Invalid input") });
    expect(job?.data.deadLetter).toBe("order.created: data.id: Invalid input");
    // `only: []` counted every handler done: the replay ran nothing and was recorded handled.
    expect(job?.data.only).toBeUndefined();
  });

  it("deduplicates on the stream entry: one entry moved twice is one job, two entries two jobs", () => {
    const dedupOf = (entryId: string) => next(retried(["user:review.created:0"]), entryId)?.opts.deduplication?.id;
    expect(dedupOf("1700000000000-0")).not.toBe(dedupOf("1700000061000-0"));
    expect(dedupOf("1700000000000-0")).toBe(dedupOf("1700000000000-0"));
  });

  it("stopped while the log was away: every handler that did not succeed runs again, the successes travel as unrecorded", () => {
    const job = next({ outcome: "unrecorded", ok: { "sync:review.created:0": { status: "ok" } } });
    expect(job?.data).toMatchObject({
      only: ["user:review.created:0", "user:*:0"],
      unrecorded: { "sync:review.created:0": { status: "ok" } },
      attemptsBefore: 1,
    });
    expect(job?.data.deadLetter).toBeUndefined();
    expect(job?.opts).toMatchObject({ ...identity, attempts: 4 });
    // With one attempt configured, it still gets one job to record it.
    expect(next({ outcome: "unrecorded", ok: {} }, ENTRY, { attempts: 1 })?.opts).toEqual({ ...identity, attempts: 1, delay: 1000 });
  });
});

describe("restoredJob: the job an event the log holds as waiting waits in, made again from the log", () => {
  const NOW = Date.parse("2026-11-24T10:00:00.000Z");
  const waiting = {
    id: "evt_1",
    type: "review.created",
    receivedAt: new Date("2026-11-24T09:59:00.000Z"),
    payload: { data: { id: "rev_1" } },
    job: ENTRY,
    retry: ["user:review.created:0"],
    attempt: { number: 2, of: 5 },
    nextRetryAt: new Date(NOW + 4000),
  };

  it("keeps the recorded job id, runs the failed handlers, numbers the run on and is due at the recorded retry time", () => {
    const job = restoredJob(waiting, options, NOW);
    expect(job.opts).toMatchObject({ jobId: ENTRY, attempts: 3, delay: 4000, backoff: { type: EVENT_BACKOFF, delay: 1000 } });
    expect(job.data).toMatchObject({ id: "evt_1", only: ["user:review.created:0"], attemptsBefore: 2 });
    // The attempt runner's numbering: its first attempt is attempt 3 of 5, in the same run.
    expect(attemptOfJob({ data: job.data, attemptsMade: 0, opts: job.opts })).toEqual({ number: 3, of: 5, newRound: false });
  });

  it("is due now once the recorded retry time passed, and has an id of its own, the same everywhere, when none was recorded", () => {
    const late = restoredJob({ ...waiting, nextRetryAt: new Date(NOW - 53_000) }, options, NOW);
    expect(late.opts.delay).toBe(0);
    const a = restoredJob({ ...waiting, job: null, id: "evt:1" }, options, NOW).opts.jobId;
    expect(a).toBe(restoredJob({ ...waiting, job: null, id: "evt:1" }, options, NOW + 1).opts.jobId);
    expect(a).not.toContain(":");
  });
});
