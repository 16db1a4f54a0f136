import { describe, expect, it } from "vitest";
import { errorFingerprint, FINGERPRINT_LENGTH } from "../../src/mirror/event-log.js";

describe("errorFingerprint", () => {
  it("gives ten failures of one bug that differ only by ids, numbers and times one fingerprint", () => {
    const errors = Array.from(
      { length: 10 },
      (_, i) =>
        `order ord_${(1e6 + i * 7919).toString(36)}ab not found for evt_${i}f3a9c2d1e0 after ${i + 2} tries at 2026-11-2${i % 10}T0${i}:12:30.${i}00Z`,
    );
    const prints = new Set(errors.map(errorFingerprint));
    expect([...prints]).toEqual(["order ord_<id> not found for evt_<id> after <n> tries at <time>"]);
  });

  it("masks UUIDs, hex and base36 ids without a digit, keeping each id's prefix", () => {
    expect(errorFingerprint("job 123e4567-e89b-12d3-a456-426614174000 at 0xDEADbeef, trace 4bf92f3577b34da6")).toBe(
      "job <id> at <hex>, trace <hex>",
    );
    expect(errorFingerprint("order ord_abcdefgh refused")).toBe("order ord_<id> refused");
  });

  it("keeps words that only look like ids, and tells different errors apart", () => {
    expect(errorFingerprint("cannot move order_cancelled to status_changed")).toBe("cannot move order_cancelled to status_changed");
    expect(errorFingerprint("printer offline")).not.toBe(errorFingerprint("paper jam"));
  });

  it("reads the first line only, trimmed and bounded", () => {
    expect(errorFingerprint("  smtp refused  \n    at send (mail.js:10:3)")).toBe("smtp refused");
    expect(errorFingerprint("x".repeat(5000))).toHaveLength(FINGERPRINT_LENGTH);
    expect(errorFingerprint("")).toBe("");
  });
});
