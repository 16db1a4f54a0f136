import { describe, expect, it } from "vitest";
import type { SyncCheckpoint } from "../../src/mirror/sync-checkpoints.js";
import { syncStateOf } from "../../src/sync/first-import.js";

const at = (iso: string) => new Date(iso);
const checkpoint = (over: Partial<SyncCheckpoint>): SyncCheckpoint => ({
  tier: "full",
  kind: "orders",
  cursor: null,
  passStartedAt: at("2026-11-28T00:00:00Z"),
  passCompletedAt: null,
  records: 0,
  pages: 0,
  firstImport: true,
  since: null,
  lastCompleteAt: null,
  updatedAt: at("2026-11-28T00:00:00Z"),
  ...over,
});
const done = (kind: string, tier: SyncCheckpoint["tier"] = "full") =>
  checkpoint({ kind, tier, records: 10, passCompletedAt: at("2026-11-28T00:01:00Z"), lastCompleteAt: at("2026-11-28T00:01:00Z") });

describe("an account's sync state", () => {
  it("is importing until every kind's whole list was walked once, with the records its running walk read", () => {
    expect(syncStateOf([])).toEqual({
      state: "importing",
      kinds: {
        orders: { records: 0, walked: false },
        bookings: { records: 0, walked: false },
        "menu-items": { records: 0, walked: false },
      },
    });
    const partway = syncStateOf([done("orders"), checkpoint({ kind: "bookings", records: 300 })]);
    expect(partway.state).toBe("importing");
    expect(partway.kinds.bookings).toEqual({ records: 300, walked: false });
    expect(syncStateOf([done("orders"), done("bookings"), done("menu-items", "backfill")]).state).toBe("live");
  });

  it("counts no backfill --since as a whole walk, and stays live while a later pass runs", () => {
    const since = { ...done("menu-items", "backfill"), since: "2026-11-01" };
    expect(syncStateOf([done("orders"), done("bookings"), since]).state).toBe("importing");
    const again = { ...done("orders"), passCompletedAt: null, records: 40 };
    const live = syncStateOf([again, done("bookings"), done("menu-items")]);
    expect(live.state).toBe("live");
    expect(live.kinds.orders).toEqual({ records: 40, walked: true });
  });
});
