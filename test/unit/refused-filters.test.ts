import { describe, expect, it } from "vitest";
import { createRefusedFilters } from "../../src/sync/refresh-kind.js";

// The memory of filters the upstream refused (a permanent 4xx): what a refresh reads instead.

describe("refused filters", () => {
  it("names a refusal once, by kind and parameter names, whatever the values", () => {
    const refused = createRefusedFilters();
    expect(refused.add("bookings", { from: "2026-12-01", to: "2026-12-03" })).toBe(true);
    expect(refused.add("bookings", { from: "2027-01-01", to: "2027-01-03" })).toBe(false);
    expect(refused.add("orders", { from: "2026-12-01", to: "2026-12-03" })).toBe(true);
  });

  it("reads a refused window from its lower bound on, and leaves other kinds and filters as they are", () => {
    const refused = createRefusedFilters();
    refused.add("bookings", { from: "2026-12-01", to: "2026-12-03" });
    expect(refused.usable("bookings", [{ from: "2026-11-30", to: "2026-12-02" }])).toEqual([{ from: "2026-11-30" }]);
    expect(refused.usable("bookings", [{ from: "2026-11-30" }, {}])).toEqual([{ from: "2026-11-30" }, {}]);
    expect(refused.usable("orders", [{ status: "PENDING" }, { status: "CONFIRMED" }])).toEqual([
      { status: "PENDING" },
      { status: "CONFIRMED" },
    ]);
  });

  it("drops a refused filter for the next candidate, ends with the unfiltered list, and with nothing once that is refused too", () => {
    const refused = createRefusedFilters();
    refused.add("orders", { status: "PENDING" });
    // Every status read is refused (by name, not value): the unfiltered list is what is left.
    expect(refused.usable("orders", [{ status: "PENDING" }, { status: "CONFIRMED" }])).toEqual([{}]);
    expect(refused.usable("orders", [{ status: "PENDING" }, {}])).toEqual([{}]);
    refused.add("bookings", { from: "2026-12-01", to: "2026-12-02" });
    refused.add("bookings", { from: "2026-12-01" });
    expect(refused.usable("bookings", [{ from: "2026-11-30", to: "2026-12-02" }])).toEqual([{}]);
    refused.add("bookings", {});
    expect(refused.usable("bookings", [{ from: "2026-11-30", to: "2026-12-02" }, {}])).toEqual([]);
    expect(refused.usable("bookings", [])).toEqual([]);
  });
});
