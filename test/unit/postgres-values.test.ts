import { describe, expect, it } from "vitest";
import { isCalendarDate, isTimeOfDay, isTimestamp } from "../../src/base/iso-time.js";
import { findUnstorableString, fitsKey, isInt32, storableText } from "../../src/mirror/values.js";
import { cutAt, shortened } from "../../src/base/text.js";

describe("values PostgreSQL would refuse", () => {
  it("knows a calendar date from one Date.parse only pretends to read", () => {
    expect(isCalendarDate("2026-02-28")).toBe(true);
    expect(isCalendarDate("2028-02-29")).toBe(true);
    expect(Number.isNaN(Date.parse("2026-02-30"))).toBe(false); // why this module exists
    for (const bad of ["2026-02-30", "2026-02-29", "2100-02-29", "2026-04-31", "2026-13-01", "0000-01-01", "2026-1-01"])
      expect(isCalendarDate(bad), bad).toBe(false);
    expect(isCalendarDate("0001-01-01")).toBe(true);
  });

  it("accepts the ISO-8601 timestamps the API sends and refuses out-of-range parts", () => {
    for (const good of [
      "2026-11-20T10:00:00.000Z",
      "2026-11-20T10:00Z",
      "2026-11-20",
      "2026-11-20T10:00:00+05:30",
      "2026-11-20T23:59:59-0800",
    ])
      expect(isTimestamp(good), good).toBe(true);
    for (const bad of [
      "2026-02-30T10:00:00Z",
      "2026-11-20T24:00:00Z",
      "2026-11-20T10:60:00Z",
      "2026-11-20T10:00:60Z",
      "2026-11-20T10:00:00+16:00",
      "yesterday",
      "2026-11-20 10:00:00",
      "+275760-09-13T00:00:00Z",
    ])
      expect(isTimestamp(bad), bad).toBe(false);
  });

  it("reads times of day, int32 and key sizes", () => {
    expect(isTimeOfDay("19:30")).toBe(true);
    expect(isTimeOfDay("23:59:59")).toBe(true);
    expect(isTimeOfDay("24:00")).toBe(false);
    expect(isTimeOfDay("7:30")).toBe(false);
    expect(isInt32(2 ** 31 - 1)).toBe(true);
    expect(isInt32(2 ** 31)).toBe(false);
    expect(isInt32(-(2 ** 31))).toBe(true);
    expect(isInt32(1.5)).toBe(false);
    expect(fitsKey("x".repeat(1000))).toBe(true);
    expect(fitsKey("x".repeat(1001))).toBe(false);
    expect(fitsKey("é".repeat(400))).toBe(true);
    expect(fitsKey("é".repeat(501))).toBe(false);
  });

  it("finds NUL and lone surrogates anywhere in a record, keys included, with the path", () => {
    expect(findUnstorableString({ a: [1, { b: "ok" }], c: "fine 😀" })).toBeUndefined();
    expect(findUnstorableString({ diner: { name: "Ada\u0000" } })).toEqual({ path: "diner.name", reason: "nul_character" });
    expect(findUnstorableString({ items: [{ notes: "x" }, { notes: "\udc00" }] })).toEqual({
      path: "items[1].notes",
      reason: "lone_surrogate",
    });
    expect(findUnstorableString({ a: { ["\ud83d"]: 1 } })).toEqual({ path: "a.(a key)", reason: "lone_surrogate" });
    let deep: unknown = "\u0000";
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(findUnstorableString(deep)?.reason).toBe("nul_character");
  });

  it("makes text storable and short without splitting a character", () => {
    expect(storableText("a\u0000b")).toBe("a\\u0000b");
    expect(storableText("\ud800x")).toBe("\\ud800x");
    expect(storableText("x".repeat(50), 10)).toBe("xxxxxxxxxx… (50 chars)");
    expect(cutAt("ab😀", 3)).toBe("ab");
    expect(cutAt("ab😀", 4)).toBe("ab😀");
    // A line's text: whole up to the limit, else cut (never inside a character) and marked.
    expect(shortened("abc", 3)).toBe("abc");
    expect(shortened("abcd", 3)).toBe("abc…");
    expect(shortened("ab😀c", 3)).toBe("ab…");
  });
});
