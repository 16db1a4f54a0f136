import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeEventCursor, encodeEventCursor, eventQueryFromParams, validateEventQuery } from "../../src/mirror/event-log.js";
import { encodeCursor, validateFilter, validateRecordId } from "../../src/mirror/mirror-store.js";
import { parseIsoInstant } from "../../src/base/iso-time.js";
import { idProblem } from "../../src/base/text.js";

const instantOf = (year: number, month = 1, day = 1) => {
  const d = new Date(Date.UTC(2000, month - 1, day));
  d.setUTCFullYear(year);
  return d;
};
const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64url");
const problemOf = (text: string) => {
  const r = parseIsoInstant(text);
  return r.ok ? undefined : r.problem;
};

describe("parseIsoInstant", () => {
  it("reads dates as midnight UTC and timestamps with their zone", () => {
    expect(parseIsoInstant("2026-11-23")).toEqual({ ok: true, instant: new Date("2026-11-23T00:00:00Z"), dateOnly: true });
    expect(parseIsoInstant("2026-11-23T10:00+01:00")).toMatchObject({ instant: new Date("2026-11-23T09:00:00Z"), dateOnly: false });
    expect(parseIsoInstant("2024-02-29T23:59:59.999Z")).toMatchObject({ instant: new Date("2024-02-29T23:59:59.999Z") });
    expect(parseIsoInstant("0001-01-01")).toMatchObject({ instant: instantOf(1) });
    // Finer than a millisecond rounds up, so >= and < stay exact against millisecond times.
    expect(parseIsoInstant("2026-11-23T10:00:00.0001Z")).toMatchObject({ instant: new Date("2026-11-23T10:00:00.001Z") });
  });

  it.each([
    ["2026-02-30", /February 2026 has 28 days/],
    ["2025-02-29", /February 2025 has 28 days/],
    ["2026-04-31", /April 2026 has 30 days/],
    ["2026-13-01", /months run from 01 to 12/],
    ["0000-01-01", /year 0000; years run from 0001 to 9999/],
    ["2026-11-23 junk", /must be a date \(2026-11-23\) or a timestamp with a zone/],
    ["2026-11-23T10:00:00", /with a zone/],
    ["+275760-09-13T00:00:00.000Z", /must be a date/],
    ["2026-11-23T24:00Z", /outside 00:00:00–23:59:59/],
    ["2026-11-23T10:00:60Z", /outside 00:00:00–23:59:59/],
    ["2026-11-23T10:00+15:00", /zone offset/],
    ["9999-12-31T23:00-05:00", /outside the years 0001–9999 in UTC/],
    ["0001-01-01T00:30+01:00", /outside the years 0001–9999 in UTC/],
  ])("refuses %s, saying why", (text, why) => {
    expect(problemOf(text)).toMatch(why);
  });

  it("round-trips every millisecond instant of the years 0001–9999 as toISOString writes it", () => {
    fc.assert(
      fc.property(fc.date({ min: instantOf(1), max: new Date("9999-12-31T23:59:59.999Z"), noInvalidDate: true }), (date) => {
        expect(parseIsoInstant(date.toISOString())).toEqual({ ok: true, instant: date, dateOnly: false });
      }),
    );
  });

  it("accepts a day exactly when the calendar has it", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 9999 }), fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 31 }), (y, m, d) => {
        const text = `${String(y).padStart(4, "0")}-${String(m).padStart(2, "0")}-${String(d).padStart(2, "0")}`;
        const real = instantOf(y, m, d).getUTCDate() === d; // JavaScript rolls an impossible day into the next month
        expect(parseIsoInstant(text).ok).toBe(real);
      }),
    );
  });
});

describe("idProblem", () => {
  it("refuses NUL and other control characters, lone surrogates, empty and overlong ids", () => {
    expect(idProblem("evt_1")).toBeUndefined();
    expect(idProblem("ord_\u00e9\u{1F600}")).toBeUndefined();
    expect(idProblem("a\u0000b")).toMatch(/control characters \(U\+0000\)/);
    expect(idProblem("a\nb")).toMatch(/U\+000A/);
    expect(idProblem("a\ud800")).toMatch(/lone surrogate/);
    expect(idProblem("")).toMatch(/empty/);
    expect(idProblem("x".repeat(201))).toMatch(/at most 200/);
  });
});

describe("event query parameters", () => {
  it("refuses since/until that are not real dates, or carry junk", () => {
    expect(() => eventQueryFromParams({ since: "2026-02-30" })).toThrow(/since is not a calendar date: February 2026 has 28 days/);
    expect(() => eventQueryFromParams({ since: "2026-11-23 junk" })).toThrow(/since must be a date/);
    expect(() => eventQueryFromParams({ until: "0000-01-01" })).toThrow(/until has year 0000/);
    expect(eventQueryFromParams({ since: "2026-11-23" }).since).toEqual(new Date("2026-11-23T00:00:00Z"));
  });

  it("refuses a Date outside the years 0001–9999 from a library caller", () => {
    expect(() => validateEventQuery({ since: new Date(8.64e15) })).toThrow(/years 0001–9999/);
    expect(() => validateEventQuery({ until: instantOf(0) })).toThrow(/years 0001–9999/);
  });

  it("finds by any handler key the registry gives (the id rule), and refuses what could be no key", () => {
    const named = "user:order.created:notify kitchen ünd bar";
    expect(validateEventQuery({ handler: named }).handler).toBe(named);
    const long = `user:order.${"x".repeat(150)}:notify`;
    expect(validateEventQuery({ handler: long }).handler).toBe(long);
    expect(() => validateEventQuery({ handler: "x".repeat(201) })).toThrow(/handler must be at most 200 characters/);
    expect(() => validateEventQuery({ handler: "user:a\nb" })).toThrow(/^handler /);
    expect(() => validateEventQuery({ handler: "" })).toThrow(/^handler /);
  });

  it("decodes only cursors it could have written", () => {
    const at = new Date("2026-11-23T10:00:00.123Z");
    expect(decodeEventCursor(encodeEventCursor(at, "evt_1"))).toEqual({ receivedAt: at, id: "evt_1" });
    expect(() => decodeEventCursor(b64("0000-01-01T00:00:00.000Z|evt_1"))).toThrow(/its time has year 0000/);
    expect(() => decodeEventCursor(b64("+275760-09-13T00:00:00.000Z|evt_1"))).toThrow(/not a time and an id/);
    expect(() => decodeEventCursor(b64("2026-02-30T00:00:00.000Z|evt_1"))).toThrow(/February 2026 has 28 days/);
    expect(() => decodeEventCursor(b64("2026-11-23T10:00:00.000Z|evt\u0000"))).toThrow(/its id must not hold control characters/);
    expect(() => decodeEventCursor("garbage!")).toThrow(/not base64url/);
  });
});

describe("mirror filters", () => {
  it("refuses impossible dates, years PostgreSQL cannot hold, control characters in ids and cursors", () => {
    expect(() => validateFilter("orders", { from: "0000-01-01" })).toThrow(/from has year 0000/);
    expect(() => validateFilter("bookings", { to: "2026-02-30" })).toThrow(/to is not a calendar date/);
    expect(() => validateFilter("bookings", { from: "2026-11-20T08:00:00Z" })).toThrow(/from must be a date YYYY-MM-DD/);
    expect(() => validateFilter("orders", { restaurantId: "r\u0000" })).toThrow(/restaurantId must not hold control characters/);
    expect(() => validateFilter("orders", { cursor: encodeCursor("ord\u0000") })).toThrow(/cursor is not one this API returned/);
    expect(() => validateRecordId("ord_\u0000")).toThrow(/id must not hold control characters/);
    expect(validateFilter("orders", { from: "2026-11-20T08:00:00+01:00", to: "2026-11-21" })).toMatchObject({
      from: "2026-11-20T08:00:00+01:00",
      to: "2026-11-21",
    });
  });
});
