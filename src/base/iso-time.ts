// An ISO-8601 date, timestamp or time of day as the service accepts it from outside: one grammar,
// `YYYY-MM-DD[THH:MM[:SS[.f…]][Z|±HH[:]MM]]`, checked field by field against the calendar and the
// clock. JavaScript's `Date` parser is lenient (`2026-02-30` becomes 2 March, trailing junk is
// accepted, "-5" is a date) and reaches years PostgreSQL cannot hold (0000, +275760), so no value
// from outside is read with it. Two readings of the grammar, since two callers need different
// things of it: a record's timestamp as PostgreSQL stores it (`isTimestamp`: the zone optional),
// and an operator's bound as an instant (`parseIsoInstant`: a date, or a timestamp with a zone).

/** A valid instant, or why the text is not one (a phrase to follow the field's name). */
export type InstantResult = { ok: true; instant: Date; dateOnly: boolean } | { ok: false; problem: string };

// Groups: year, month, day; hour, minute, second, fraction; zone (Z or the offset's sign, hours, minutes).
const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|([+-])(\d{2}):?(\d{2}))?)?$/;
const TIME_OF_DAY = /^(\d{2}):(\d{2})(?::(\d{2}))?$/;
const MIN_YEAR = 1;
const MAX_YEAR = 9999;

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const isLeap = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
const daysInMonth = (year: number, month: number) => (DAYS[month - 1] ?? 0) + (month === 2 && isLeap(year) ? 1 : 0);
const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

const inRange = (text: string | undefined, max: number) => text === undefined || Number(text) <= max;

/** Year, month and day, checked against the calendar; a problem phrase when they are not a real date. */
function calendarProblem(year: number, month: number, day: number): string | undefined {
  if (year < MIN_YEAR || year > MAX_YEAR) return `has year ${String(year).padStart(4, "0")}; years run from 0001 to 9999`;
  if (month < 1 || month > 12) return `has month ${String(month).padStart(2, "0")}; months run from 01 to 12`;
  const days = daysInMonth(year, month);
  if (day < 1 || day > days) return `is not a calendar date: ${MONTHS[month - 1] ?? ""} ${year} has ${days} days`;
  return undefined;
}

/** The grammar's groups and the calendar's problem with them, or undefined when the text is not in the grammar. */
function read(text: string): { m: RegExpExecArray; calendar: string | undefined } | undefined {
  const m = ISO_8601.exec(text);
  return m === null ? undefined : { m, calendar: calendarProblem(Number(m[1]), Number(m[2]), Number(m[3])) };
}

/** Milliseconds since the epoch of a UTC wall time (Date.UTC maps years 0–99 to 1900–1999, so set the year apart). */
function utcMillis(year: number, month: number, day: number, hour = 0, minute = 0, second = 0, ms = 0): number {
  const date = new Date(Date.UTC(2000, month - 1, day, hour, minute, second, ms));
  date.setUTCFullYear(year);
  return date.getTime();
}

/** `YYYY-MM-DD`, a real calendar day in the years 0001–9999 (2026-02-30 is none): record fields, backfill's `--since` and the operator API's. */
export function isCalendarDate(value: string): boolean {
  const r = read(value);
  return r !== undefined && r.m[4] === undefined && r.calendar === undefined;
}

/**
 * A record's timestamp as PostgreSQL stores it as written: the whole grammar, the zone optional,
 * with hours 0–23, minutes and seconds 0–59 and a zone offset under 16 h (PostgreSQL's bound).
 */
export function isTimestamp(value: string): boolean {
  const r = read(value);
  if (r === undefined || r.calendar !== undefined) return false;
  const { m } = r;
  return inRange(m[4], 23) && inRange(m[5], 59) && inRange(m[6], 59) && inRange(m[10], 15) && inRange(m[11], 59);
}

/** `HH:MM` or `HH:MM:SS` within one day. */
export function isTimeOfDay(value: string): boolean {
  const m = TIME_OF_DAY.exec(value);
  return m !== null && inRange(m[1], 23) && inRange(m[2], 59) && inRange(m[3], 59);
}

/**
 * An operator's bound (a filter, a cursor) as an instant: a date `2026-11-23` (midnight UTC) or a
 * timestamp with a zone `2026-11-23T10:00:00Z` / `…+01:00`, to the microsecond at most (what
 * PostgreSQL holds) and with a zone offset of a real zone (±14:00), so a bad value is a 400 that
 * says why rather than a wrong answer or a database error. A fraction finer than a millisecond
 * rounds up to the next one (`dateOnly` false), which keeps `>=` and `<` bounds exact against
 * times stored to the millisecond.
 */
export function parseIsoInstant(text: string): InstantResult {
  const r = read(text);
  const stamped = r?.m[4] !== undefined;
  if (!r || (stamped && (r.m[8] === undefined || (r.m[7] ?? "").length > 6)))
    return { ok: false, problem: "must be a date (2026-11-23) or a timestamp with a zone (2026-11-23T10:00:00Z)" };
  const { m, calendar } = r;
  if (calendar) return { ok: false, problem: calendar };
  const [year, month, day] = [m[1], m[2], m[3]].map(Number) as [number, number, number];
  if (!stamped) return { ok: true, instant: new Date(utcMillis(year, month, day)), dateOnly: true };

  const [hour, minute, second] = [m[4], m[5], m[6] ?? "0"].map(Number) as [number, number, number];
  if (hour > 23 || minute > 59 || second > 59) return { ok: false, problem: "has a time outside 00:00:00–23:59:59" };
  const fraction = (m[7] ?? "").padEnd(6, "0");
  const ms = Number(fraction.slice(0, 3)) + (Number(fraction.slice(3)) > 0 ? 1 : 0);
  let offsetMinutes = 0;
  if (m[8] !== "Z") {
    const [hours, minutes] = [Number(m[10]), Number(m[11])];
    if (hours > 14 || minutes > 59 || (hours === 14 && minutes > 0))
      return { ok: false, problem: "has a zone offset outside -14:00…+14:00" };
    offsetMinutes = (m[9] === "-" ? -1 : 1) * (hours * 60 + minutes);
  }
  const instant = new Date(utcMillis(year, month, day, hour, minute, second, ms) - offsetMinutes * 60_000);
  const utcYear = instant.getUTCFullYear();
  if (utcYear < MIN_YEAR || utcYear > MAX_YEAR) return { ok: false, problem: "falls outside the years 0001–9999 in UTC" };
  return { ok: true, instant, dateOnly: false };
}

/** A Date that names an instant (not an Invalid Date), whatever a JavaScript caller passed. */
export const isValidDate = (value: unknown): value is Date => value instanceof Date && !Number.isNaN(value.getTime());

/** A Date a library caller passed: valid and within the grammar's years, which PostgreSQL and the cursors hold. */
export function isStorableDate(value: unknown): value is Date {
  if (!isValidDate(value)) return false;
  const year = value.getUTCFullYear();
  return year >= MIN_YEAR && year <= MAX_YEAR;
}
