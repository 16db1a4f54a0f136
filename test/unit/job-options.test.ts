import { describe, expect, it } from "vitest";
import { attemptOfJob, drawRetryDelay, EVENT_BACKOFF } from "../../src/queue/attempt-runner.js";
import { eventRetryOptions, KEPT_STACKS, retryJobOptions } from "../../src/queue/events-queue.js";

describe("retry options", () => {
  it("retries every job exponentially with jitter; events queue jobs by the attempt's draw", () => {
    expect(retryJobOptions(10, 1000)).toEqual({
      attempts: 10,
      backoff: { type: "exponential", delay: 1000, jitter: 0.5 },
      stackTraceLimit: KEPT_STACKS,
    });
    expect(eventRetryOptions(10, 1000)).toEqual({
      attempts: 10,
      backoff: { type: EVENT_BACKOFF, delay: 1000, jitter: 0.5 },
      stackTraceLimit: KEPT_STACKS,
    });
  });
});

describe("drawRetryDelay", () => {
  it("draws what BullMQ's built-in strategies draw, for the attempt it is given", () => {
    // Jitter 0.5: between half of the longest wait and the longest.
    for (const [attempt, longest] of [
      [1, 1000],
      [2, 2000],
      [3, 4000],
    ] as const) {
      const wait = drawRetryDelay({ type: EVENT_BACKOFF, delay: 1000, jitter: 0.5 }, attempt)!;
      expect(wait).toBeGreaterThanOrEqual(longest / 2);
      expect(wait).toBeLessThanOrEqual(longest);
    }
    expect(drawRetryDelay({ type: "exponential", delay: 1000 }, 3)).toBe(4000);
    expect(drawRetryDelay({ type: "fixed", delay: 300 }, 5)).toBe(300);
    // A number is a fixed delay, as BullMQ reads it.
    expect(drawRetryDelay(300, 5)).toBe(300);
  });

  it("leaves a strategy it does not know (a custom one) to BullMQ", () => {
    expect(drawRetryDelay({ type: "custom" }, 1)).toBeUndefined();
    expect(drawRetryDelay(undefined, 1)).toBeUndefined();
  });
});

describe("attemptOfJob: attempt n of N in its run", () => {
  const job = (attemptsMade: number, attempts: number, data: { attemptsBefore?: number; replay?: true } = {}) =>
    attemptOfJob({ data, attemptsMade, opts: { attempts } });

  it("numbers a first delivery's job on from its attempt on the stream", () => {
    expect(job(0, 4, { attemptsBefore: 1 })).toEqual({ number: 2, of: 5, newRound: false });
    expect(job(3, 4, { attemptsBefore: 1 })).toEqual({ number: 5, of: 5, newRound: false });
    expect(job(0, 5)).toEqual({ number: 1, of: 5, newRound: false });
  });

  it("starts a replay's run at 1 of JOB_ATTEMPTS, whatever the event went through before", () => {
    expect(job(0, 5, { replay: true })).toEqual({ number: 1, of: 5, newRound: true });
    expect(job(2, 5, { replay: true })).toEqual({ number: 3, of: 5, newRound: false });
  });

  it("makes a failed job retried by hand a run of one attempt", () => {
    expect(job(4, 4, { attemptsBefore: 1 })).toEqual({ number: 1, of: 1, newRound: true });
    expect(job(5, 5, { replay: true })).toEqual({ number: 1, of: 1, newRound: true });
  });
});
