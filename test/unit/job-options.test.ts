import { describe, expect, it } from "vitest";
import { firstRetryDelayMs, KEPT_STACKS, remainingRetryOptions, retryDelayMs, retryJobOptions } from "../../src/queue/job-options.js";

describe("remainingRetryOptions", () => {
  it("continues the schedule retryJobOptions would have followed after a first attempt outside BullMQ", () => {
    // Without jitter (random() = 1 gives the longest delay): the first retry waits the base delay,
    // and BullMQ's exponential backoff from 2× the base gives 2×, 4×, … as retryJobOptions does.
    const options = remainingRetryOptions(
      10,
      1000,
      firstRetryDelayMs(1000, () => 1),
    );
    expect(options).toEqual({ attempts: 9, delay: 1000, backoff: { type: "exponential", delay: 2000, jitter: 0.5 } });
    expect(retryJobOptions(10, 1000)).toEqual({
      attempts: 10,
      backoff: { type: "exponential", delay: 1000, jitter: 0.5 },
      stackTraceLimit: KEPT_STACKS,
    });
  });

  it("jitters the first delay down to half, as BullMQ's jitter 0.5 does", () => {
    expect(
      remainingRetryOptions(
        3,
        1000,
        firstRetryDelayMs(1000, () => 0),
      )?.delay,
    ).toBe(500);
  });

  it("waits the delay its first attempt recorded as the next retry", () => {
    expect(remainingRetryOptions(3, 1000, 777)?.delay).toBe(777);
  });

  it("leaves no retry when one attempt was all there was", () => {
    expect(remainingRetryOptions(1, 1000)).toBeUndefined();
  });
});

describe("retryDelayMs", () => {
  it("draws what BullMQ's built-in strategies draw, for the retry it is given", () => {
    const exponential = { type: "exponential", delay: 1000, jitter: 0.5 };
    // random() = 1 is the longest wait, 0 the shortest (half of it, with jitter 0.5).
    expect([1, 2, 3].map((retry) => retryDelayMs(exponential, retry, () => 1))).toEqual([1000, 2000, 4000]);
    expect([1, 2, 3].map((retry) => retryDelayMs(exponential, retry, () => 0))).toEqual([500, 1000, 2000]);
    expect(retryDelayMs({ type: "exponential", delay: 1000 }, 3)).toBe(4000);
    expect(retryDelayMs({ type: "fixed", delay: 300 }, 5)).toBe(300);
  });

  it("leaves a strategy it does not know (a custom one) to BullMQ", () => {
    expect(retryDelayMs({ type: "custom" }, 1)).toBeUndefined();
    expect(retryDelayMs(undefined, 1)).toBeUndefined();
  });
});
