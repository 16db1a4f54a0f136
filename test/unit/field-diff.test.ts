import { describe, expect, it } from "vitest";
import { fieldDiff } from "../../src/mirror/record-story.js";

describe("fieldDiff", () => {
  const before = { id: "ord_1", status: "PENDING", total: 11, items: [{ id: "it_1", quantity: 1 }] };

  it("lists the fields a change names, before and after, not two whole documents", () => {
    const after = { ...before, status: "REFUNDED", refundedAt: "2026-11-24T05:00:00Z" };
    expect(fieldDiff(before, after, ["status", "refundedAt"])).toEqual([
      { field: "refundedAt", before: null, after: "2026-11-24T05:00:00Z" },
      { field: "status", before: "PENDING", after: "REFUNDED" },
    ]);
  });

  it("finds the differing fields itself when no list is given, comparing nested values deeply", () => {
    const after = { ...before, items: [{ id: "it_1", quantity: 2 }], total: 11 };
    expect(fieldDiff(before, after)).toEqual([{ field: "items", before: before.items, after: after.items }]);
    expect(fieldDiff(before, { ...before })).toEqual([]);
  });

  it("reads a record seen for the first time as null before, listing only the fields that hold a value", () => {
    expect(fieldDiff(null, { id: "ord_1" })).toEqual([{ field: "id", before: null, after: "ord_1" }]);
    expect(fieldDiff(null, { id: "ord_1", bookingId: null }, ["bookingId", "id"])).toEqual([{ field: "id", before: null, after: "ord_1" }]);
    expect(fieldDiff(null, { bookingId: null })).toEqual([]);
  });

  it("keeps a field that changed to null on a record that existed", () => {
    expect(fieldDiff({ bookingId: "bkg_1" }, { bookingId: null })).toEqual([{ field: "bookingId", before: "bkg_1", after: null }]);
  });
});
