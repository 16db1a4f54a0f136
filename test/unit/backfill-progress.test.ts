import { describe, expect, it } from "vitest";
import { createBackfillProgress } from "../../src/bin/backfill.js";
import type { SyncCheckpoint } from "../../src/mirror/sync-checkpoints.js";
import type { BackfillProgress } from "../../src/sync/resumable-backfill.js";

const checkpoint = (records: number, pages: number): SyncCheckpoint => ({
  tier: "backfill",
  kind: "orders",
  cursor: "c",
  passStartedAt: new Date(0),
  passCompletedAt: null,
  records,
  pages,
  firstImport: false,
  since: null,
  lastCompleteAt: null,
  updatedAt: new Date(0),
});
const progress = (records: number, extra: Partial<BackfillProgress> = {}): BackfillProgress => ({
  kind: "orders",
  checkpoint: checkpoint(records, records / 100),
  records,
  resumed: false,
  skipped: false,
  done: false,
  ...extra,
});

describe("backfill progress line", () => {
  it("shows records/s and an ETA from the list's known size at the observed rate", () => {
    let now = 0;
    const line = createBackfillProgress({ budgetRecordsPerSecond: 50, expected: () => 10_000, now: () => now });
    line(progress(0));
    now = 10_000;
    // 200 records in 10 s: 20/s, 9,800 left → 490 s.
    expect(line(progress(200))).toBe("orders: 200 records, 2 pages, 20.0 records/s, ETA 8 min 10 s");
  });

  it("never promises more than the budget allows", () => {
    let now = 0;
    const line = createBackfillProgress({ budgetRecordsPerSecond: 10, expected: () => 1200, now: () => now });
    line(progress(0));
    now = 1000;
    // 200/s observed (a burst), but the full class allows 10/s: 1,000 left → 100 s.
    expect(line(progress(200))).toContain("ETA 1 min 40 s");
  });

  it("says the ETA is unknown without an earlier complete pass, naming the budget's ceiling", () => {
    const line = createBackfillProgress({ budgetRecordsPerSecond: 49.2, expected: () => undefined, now: () => 0 });
    expect(line(progress(100))).toContain("ETA unknown (budget ≤ 49 records/s)");
  });

  it("marks a resumed kind, a finished one and one the interrupted run had finished", () => {
    const line = createBackfillProgress({ budgetRecordsPerSecond: 50, expected: () => undefined, now: () => 0 });
    expect(line(progress(300, { resumed: true, done: true }))).toBe("orders: 300 records, 3 pages (resumed) — done");
    expect(line(progress(0, { skipped: true, checkpoint: checkpoint(900, 9) }))).toBe(
      "orders: done in the interrupted run (900 records), not read again",
    );
  });
});
