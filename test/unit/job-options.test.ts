import { describe, expect, it } from "vitest";
import { KEPT_STACKS, remainingRetryOptions, retryJobOptions } from "../../src/queue/job-options.js";

describe("remainingRetryOptions", () => {
  it("continues the schedule retryJobOptions would have followed after a first attempt outside BullMQ", () => {
    // Without jitter (random() = 1 gives the longest delay): the first retry waits the base delay,
    // and BullMQ's exponential backoff from 2× the base gives 2×, 4×, … as retryJobOptions does.
    const options = remainingRetryOptions(10, 1000, () => 1);
    expect(options).toEqual({ attempts: 9, delay: 1000, backoff: { type: "exponential", delay: 2000, jitter: 0.5 } });
    expect(retryJobOptions(10, 1000)).toEqual({
      attempts: 10,
      backoff: { type: "exponential", delay: 1000, jitter: 0.5 },
      stackTraceLimit: KEPT_STACKS,
    });
  });

  it("jitters the first delay down to half, as BullMQ's jitter 0.5 does", () => {
    expect(remainingRetryOptions(3, 1000, () => 0)?.delay).toBe(500);
  });

  it("leaves no retry when one attempt was all there was", () => {
    expect(remainingRetryOptions(1, 1000)).toBeUndefined();
  });
});
