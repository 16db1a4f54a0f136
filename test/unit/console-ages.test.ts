import { describe, expect, it } from "vitest";
import { duration } from "../../src/base/duration.js";
import { age, ago } from "../../src/http/console/layout.js";

describe("the console's ages", () => {
  it("writes seconds under a minute, then the largest whole unit and the next one down", () => {
    expect([0, 1, 59.9, 60, 115, 150, 3599, 3600, 7199, 86399, 86400, 2.5 * 86400].map(duration)).toEqual([
      "0 s",
      "1 s",
      "59 s",
      "1 min",
      "1 min 55 s",
      "2 min 30 s",
      "59 min 59 s",
      "1 h",
      "1 h 59 min",
      "23 h 59 min",
      "1 d",
      "2 d 12 h",
    ]);
    expect(duration(5400)).toBe("1 h 30 min");
  });

  it("says just now within a second either way, never in 0 s or 0 s ago", () => {
    expect([0, 0.4, 0.9, -0.2, -0.9].map(age)).toEqual(["just now", "just now", "just now", "just now", "just now"]);
  });

  it("writes a past moment as … ago and a coming one as in …", () => {
    expect([12, 115, 120, 3 * 3600, -40, -150].map(age)).toEqual([
      "12 s ago",
      "1 min 55 s ago",
      "2 min ago",
      "3 h ago",
      "in 40 s",
      "in 2 min 30 s",
    ]);
    const now = new Date("2026-11-27T12:00:00Z");
    expect(ago(new Date("2026-11-27T11:58:05Z"), now)).toBe("1 min 55 s ago");
    expect(ago(new Date("2026-11-27T12:00:00.300Z"), now)).toBe("just now");
  });
});
