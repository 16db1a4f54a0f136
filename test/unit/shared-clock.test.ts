import { describe, expect, it } from "vitest";
import { createSharedClock } from "../../src/mirror/mirror-store.js";

/** A database clock under the test's hand: each read answers when `answer` is called. */
function manualDatabase() {
  const reads: ((at: number) => void)[] = [];
  return {
    reads,
    read: () => new Promise<Date>((resolve) => reads.push((at) => resolve(new Date(at)))),
    answer(at: number) {
      const next = reads.shift();
      if (!next) throw new Error("no read is waiting");
      next(at);
    },
  };
}

/** A clock on a manual database and monotonic time, its first sample `at` already read. */
async function startedAt(at: number, options: { freshMs?: number; maxAgeMs?: number } = {}) {
  const time = { now: 0 };
  const db = manualDatabase();
  const clock = createSharedClock({ read: db.read, monotonic: () => time.now, ...options });
  const first = clock();
  db.answer(at);
  expect((await first).getTime()).toBe(at);
  return { time, db, clock };
}

describe("the shared clock", () => {
  it("answers from one sample carried forward, as a lower bound of the database's time", async () => {
    const { time, db, clock } = await startedAt(1_000_000, { freshMs: 1000 });
    time.now = 400;
    // 400 ms later on this process's clock, less the most NTP may slew the database's meanwhile.
    const carried = (await clock()).getTime();
    expect(carried).toBeLessThanOrEqual(1_000_400);
    expect(carried).toBeGreaterThanOrEqual(1_000_399);
    expect(db.reads).toHaveLength(0);
  });

  it("reads again in the background once the sample is stale, and waits only once it is old", async () => {
    const { time, db, clock } = await startedAt(5_000_000, { freshMs: 1000, maxAgeMs: 60_000 });
    time.now = 1500;
    // Stale: answered at once from the sample, with one read started for the next calls.
    expect((await clock()).getTime()).toBeGreaterThan(5_001_400);
    expect((await clock()).getTime()).toBeGreaterThan(5_001_400);
    expect(db.reads).toHaveLength(1);
    // Its answer is the sample from then on: carried forward from when it came.
    db.answer(5_001_600);
    await Promise.resolve();
    expect((await clock()).getTime()).toBe(5_001_600);
    expect(db.reads).toHaveLength(0);
    // Old: the next call waits for its read.
    time.now = 70_000;
    let answered = false;
    const waiting = clock().then((d) => ((answered = true), d));
    await Promise.resolve();
    expect(answered).toBe(false);
    db.answer(5_070_000);
    expect((await waiting).getTime()).toBe(5_070_000);
  });

  it("never goes back when a new sample is lower than the time carried forward", async () => {
    const { time, db, clock } = await startedAt(9_000_000, { freshMs: 10 });
    time.now = 500;
    const before = (await clock()).getTime();
    // The background read's answer came back slowly: its sample is behind the time carried forward.
    db.answer(9_000_100);
    await Promise.resolve();
    expect((await clock()).getTime()).toBe(before);
  });

  it("fails a call that must wait when the database cannot be read, and reads again at the next", async () => {
    let fail = true;
    const clock = createSharedClock({
      read: () => (fail ? Promise.reject(new Error("connect ECONNREFUSED")) : Promise.resolve(new Date(42_000))),
    });
    await expect(clock()).rejects.toThrow("ECONNREFUSED");
    fail = false;
    expect((await clock()).getTime()).toBeGreaterThanOrEqual(42_000);
  });
});
