import { describe, expect, it } from "vitest";
import { createRefreshPace, paceWaitMs } from "../../src/worker/sync/refresh-pace.js";

describe("refresh pace", () => {
  it("waits nothing below a third of the share, the most at the share and above, in proportion between", () => {
    // Share 90 slots (0.75 of 120): a third is 30.
    expect(paceWaitMs(0, 90, 4000)).toBe(0);
    expect(paceWaitMs(30, 90, 4000)).toBe(0);
    expect(paceWaitMs(60, 90, 4000)).toBe(2000);
    expect(paceWaitMs(90, 90, 4000)).toBe(4000);
    expect(paceWaitMs(120, 90, 4000)).toBe(4000);
  });

  it("waits by the rate the budget is spent at now", async () => {
    let reads = 0;
    const pace = createRefreshPace({
      // 25 slots a window at the current rate: under a third of 90, no wait.
      state: () => {
        reads++;
        return Promise.resolve({ recentPerWindow: 25, max: 120 });
      },
      share: 0.75,
      maxWaitMs: 60_000,
    });
    expect(await pace.admit()).toBe(0);
    expect(reads).toBe(1);
  });

  it("does not look at the budget when pacing is off (share 1)", async () => {
    let reads = 0;
    const state = () => {
      reads++;
      return Promise.resolve({ recentPerWindow: 120, max: 120 });
    };
    expect(await createRefreshPace({ state, share: 1, maxWaitMs: 4000 }).admit()).toBe(0);
    expect(reads).toBe(0);
  });
});
