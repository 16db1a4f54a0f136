import { describe, expect, it } from "vitest";
import { createListOrder } from "../../src/upstream/paginate.js";

const t = (iso: string) => Date.parse(iso);

describe("list order read off the data", () => {
  it("tells newest first from the keys of one page, and which targets that page already passed", () => {
    const order = createListOrder();
    order.observe([t("2026-11-20"), t("2026-11-19"), t("2026-11-19"), t("2026-11-10")]);
    expect(order.direction).toBe("descending");
    // Older than the last record seen: could still come. Newer: would have come already.
    expect(order.passed(t("2026-11-01"))).toBe(false);
    expect(order.passed(t("2026-11-15"))).toBe(true);
    // A tie with the last key may still follow it.
    expect(order.passed(t("2026-11-10"))).toBe(false);
  });

  it("tells oldest first across pages (a booking list by date)", () => {
    const order = createListOrder();
    order.observe([t("2026-01-01")]);
    expect(order.direction).toBe("unknown");
    order.observe([t("2026-01-02"), t("2026-01-05")]);
    expect(order.direction).toBe("ascending");
    expect(order.passed(t("2026-01-03"))).toBe(true);
    expect(order.passed(t("2026-01-09"))).toBe(false);
  });

  it("says unknown, and that nothing was passed, for a list in no order or with no usable keys", () => {
    const mixed = createListOrder();
    mixed.observe([t("2026-01-02"), t("2026-01-01"), t("2026-01-03")]);
    expect(mixed.direction).toBe("unknown");
    expect(mixed.passed(t("2025-01-01"))).toBe(false);
    expect(mixed.passed(t("2027-01-01"))).toBe(false);
    const empty = createListOrder();
    empty.observe([NaN, NaN]);
    expect(empty.direction).toBe("unknown");
    expect(empty.passed(0)).toBe(false);
    // One step against the direction seen is unknown for good.
    const flipped = createListOrder();
    flipped.observe([3, 2, 1]);
    flipped.observe([5]);
    expect(flipped.direction).toBe("unknown");
  });
});
