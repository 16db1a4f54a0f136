/**
 * Strict ISO 8601 for operator filters: a date `2026-11-23` (midnight UTC) or a timestamp with a
 * zone `2026-11-23T10:00:00Z` / `…+01:00`. JavaScript's `Date` parser is lenient (`2026-02-30`
 * becomes 2 March, trailing junk is accepted) and reaches years PostgreSQL cannot hold (0000,
 * +275760): every value is checked here, field by field, so a bad one is a 400 that says why
 * rather than a wrong answer or a database error.
 */

/** A valid instant, or why the text is not one (a phrase to follow the field's name). */
export type InstantResult = { ok: true; instant: Date; dateOnly: boolean } | { ok: false; problem: string };

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?(Z|([+-])(\d{2}):?(\d{2}))$/;
export const MIN_YEAR = 1;
export const MAX_YEAR = 9999;

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const isLeap = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
const daysInMonth = (year: number, month: number) => (DAYS[month - 1] ?? 0) + (month === 2 && isLeap(year) ? 1 : 0);
const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

/** Year, month and day, checked against the calendar; a problem phrase when they are not a real date. */
function calendarProblem(year: number, month: number, day: number): string | undefined {
  if (year < MIN_YEAR || year > MAX_YEAR) return `has year ${String(year).padStart(4, "0")}; years run from 0001 to 9999`;
  if (month < 1 || month > 12) return `has month ${String(month).padStart(2, "0")}; months run from 01 to 12`;
  const days = daysInMonth(year, month);
  if (day < 1 || day > days) return `is not a calendar date: ${MONTHS[month - 1] ?? ""} ${year} has ${days} days`;
  return undefined;
}

/** Milliseconds since the epoch of a UTC wall time (Date.UTC maps years 0–99 to 1900–1999, so set the year apart). */
function utcMillis(year: number, month: number, day: number, hour = 0, minute = 0, second = 0, ms = 0): number {
  const date = new Date(Date.UTC(2000, month - 1, day, hour, minute, second, ms));
  date.setUTCFullYear(year);
  return date.getTime();
}

/**
 * Parses `text` as a date (midnight UTC) or a timestamp with a zone. A fraction finer than a
 * millisecond rounds up to the next one (`dateOnly` false), which keeps `>=` and `<` bounds exact
 * against times stored to the millisecond.
 */
export function parseIsoInstant(text: string): InstantResult {
  const dateOnly = DATE_ONLY.exec(text);
  const stamp = dateOnly ? undefined : TIMESTAMP.exec(text);
  const parts = dateOnly ?? stamp;
  if (!parts) return { ok: false, problem: "must be a date (2026-11-23) or a timestamp with a zone (2026-11-23T10:00:00Z)" };
  const [year, month, day] = [parts[1], parts[2], parts[3]].map(Number) as [number, number, number];
  const calendar = calendarProblem(year, month, day);
  if (calendar) return { ok: false, problem: calendar };
  if (!stamp) return { ok: true, instant: new Date(utcMillis(year, month, day)), dateOnly: true };

  const [hour, minute, second] = [stamp[4], stamp[5], stamp[6] ?? "0"].map(Number) as [number, number, number];
  if (hour > 23 || minute > 59 || second > 59) return { ok: false, problem: "has a time outside 00:00:00–23:59:59" };
  const fraction = (stamp[7] ?? "").padEnd(6, "0");
  const ms = Number(fraction.slice(0, 3)) + (Number(fraction.slice(3)) > 0 ? 1 : 0);
  let offsetMinutes = 0;
  if (stamp[8] !== "Z") {
    const [hours, minutes] = [Number(stamp[10]), Number(stamp[11])];
    if (hours > 14 || minutes > 59 || (hours === 14 && minutes > 0))
      return { ok: false, problem: "has a zone offset outside -14:00…+14:00" };
    offsetMinutes = (stamp[9] === "-" ? -1 : 1) * (hours * 60 + minutes);
  }
  const instant = new Date(utcMillis(year, month, day, hour, minute, second, ms) - offsetMinutes * 60_000);
  const utcYear = instant.getUTCFullYear();
  if (utcYear < MIN_YEAR || utcYear > MAX_YEAR) return { ok: false, problem: "falls outside the years 0001–9999 in UTC" };
  return { ok: true, instant, dateOnly: false };
}

/** A Date a library caller passed: valid and within the years PostgreSQL and the cursors hold. */
export function isStorableDate(value: unknown): value is Date {
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) return false;
  const year = value.getUTCFullYear();
  return year >= MIN_YEAR && year <= MAX_YEAR;
}

/** A calendar day written YYYY-MM-DD (2026-02-30 is none): backfill's `--since` and the operator API's. */
export const isCalendarDay = (s: string): boolean =>
  /^\d{4}-\d{2}-\d{2}$/.test(s) && !Number.isNaN(Date.parse(s)) && new Date(s).toISOString().startsWith(s);
