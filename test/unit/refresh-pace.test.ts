import { describe, expect, it } from "vitest";
import { createRefreshPace, paceAfterRunMs, paceWaitMs } from "../../src/sync/refresh-queue.js";

describe("refresh pace", () => {
  it("waits nothing below a third of the share, the most at the share and above, in proportion between", () => {
    // Share 90 slots (0.75 of 120): a third is 30.
    expect(paceWaitMs(0, 90, 4000)).toBe(0);
    expect(paceWaitMs(30, 90, 4000)).toBe(0);
    expect(paceWaitMs(60, 90, 4000)).toBe(2000);
    expect(paceWaitMs(90, 90, 4000)).toBe(4000);
    expect(paceWaitMs(120, 90, 4000)).toBe(4000);
  });

  it("spaces the starts of a kind's runs: a run's own time counts against the pace, never below nothing", () => {
    expect(paceAfterRunMs(4000, 0)).toBe(4000);
    expect(paceAfterRunMs(4000, 2500)).toBe(1500);
    expect(paceAfterRunMs(4000, 6000)).toBe(0);
    expect(paceAfterRunMs(0, 300)).toBe(0);
  });

  it("delays the next run by the rate the webhook class spends the budget at now", async () => {
    let reads = 0;
    const pace = createRefreshPace({
      // 60 webhook slots a window at the current rate: half way from a third of 90 to 90.
      state: () => {
        reads++;
        return Promise.resolve({ recentPerWindowByClass: { webhook: 60, active: 0, full: 0 }, max: 120 });
      },
      share: 0.75,
      maxWaitMs: 40,
    });
    expect(await pace()).toBe(20);
    expect(reads).toBe(1);
  });

  it("ignores what a backfill or the active tier spends: they only take what refreshes leave", async () => {
    const pace = createRefreshPace({
      // A backfill saturating the budget, refreshes quiet: no wait.
      state: () => Promise.resolve({ recentPerWindowByClass: { webhook: 25, active: 10, full: 85 }, max: 120 }),
      share: 0.75,
      maxWaitMs: 40,
    });
    expect(await pace()).toBe(0);
  });

  it("does not look at the budget when pacing is off (share 1)", async () => {
    let reads = 0;
    const state = () => {
      reads++;
      return Promise.resolve({ recentPerWindowByClass: { webhook: 120, active: 0, full: 0 }, max: 120 });
    };
    expect(await createRefreshPace({ state, share: 1, maxWaitMs: 4000 })()).toBe(0);
    expect(reads).toBe(0);
  });
});
