// What PostgreSQL refuses, checked in JavaScript before a value reaches SQL, so one record's bad
// value is that record's problem and never fails the statement (and the page) it would share.
// Pure functions: unit-tested without a database.

/** Why a value cannot be stored: the stable reason codes of a refused record (bounded: metric labels). */
export type UnstorableReason =
  | "invalid_field"
  | "nul_character"
  | "lone_surrogate"
  | "invalid_timestamp"
  | "invalid_date"
  | "invalid_time"
  | "out_of_range"
  | "too_long";

/**
 * Bytes (UTF-8) an indexed text column may hold. A btree entry is capped at about 2,700 bytes, and
 * order_items' key holds two ids; 1,000 each leaves room for the row header.
 */
export const MAX_KEY_BYTES = 1000;
/** Characters of a decimal string: far more than any amount, far less than PostgreSQL's limit. */
export const MAX_DECIMAL_CHARS = 100;

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

// Code units, no `u` flag: a high surrogate not followed by a low one, or a low one not preceded by a high one.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-](\d{2}):?(\d{2}))?)?$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIME = /^(\d{2}):(\d{2})(?::(\d{2}))?$/;

/** Year 1..9999 (PostgreSQL has no year 0) and a day the month has: 2026-02-30 is no date. */
function isCalendarDay(year: number, month: number, day: number): boolean {
  if (year < 1 || month < 1 || month > 12 || day < 1) return false;
  // Date.UTC maps years 0..99 to 1900..1999: set the year explicitly.
  const last = new Date(Date.UTC(2000, month, 0));
  last.setUTCFullYear(year, month, 0);
  return day <= last.getUTCDate();
}

const inRange = (text: string | undefined, max: number) => text === undefined || Number(text) <= max;

/** `YYYY-MM-DD`, a real calendar day. */
export function isCalendarDate(value: string): boolean {
  const m = DATE.exec(value);
  return m !== null && isCalendarDay(Number(m[1]), Number(m[2]), Number(m[3]));
}

/**
 * An ISO-8601 timestamp PostgreSQL stores as written: `YYYY-MM-DD[THH:MM[:SS[.fff]][Z|±HH[:]MM]]`
 * with a real calendar day, hours 0–23, minutes and seconds 0–59 and a zone offset under 16 h.
 * (`Date.parse` accepts 2026-02-30 and turns it into 2 March; PostgreSQL refuses it.)
 */
export function isTimestamp(value: string): boolean {
  const m = TIMESTAMP.exec(value);
  if (m === null || !isCalendarDay(Number(m[1]), Number(m[2]), Number(m[3]))) return false;
  return inRange(m[4], 23) && inRange(m[5], 59) && inRange(m[6], 59) && inRange(m[8], 15) && inRange(m[9], 59);
}

/** `HH:MM` or `HH:MM:SS` within one day. */
export function isTimeOfDay(value: string): boolean {
  const m = TIME.exec(value);
  return m !== null && inRange(m[1], 23) && inRange(m[2], 59) && inRange(m[3], 59);
}

/** A whole number an `integer` column holds. */
export const isInt32 = (value: unknown): value is number =>
  Number.isSafeInteger(value) && (value as number) >= INT32_MIN && (value as number) <= INT32_MAX;

/** Fits an indexed text column (see MAX_KEY_BYTES). */
export const fitsKey = (value: string): boolean => value.length <= MAX_KEY_BYTES / 3 || Buffer.byteLength(value) <= MAX_KEY_BYTES;

/** Why a string cannot be PostgreSQL text or part of jsonb, if it cannot. */
export function unstorableString(value: string): "nul_character" | "lone_surrogate" | undefined {
  if (value.includes("\u0000")) return "nul_character";
  if (LONE_SURROGATE.test(value)) return "lone_surrogate";
  return undefined;
}

/**
 * The first string (value or key) anywhere in a JSON value that PostgreSQL would refuse, with its
 * path (`diner.name`, `items[2].notes`). Iterative, so a deeply nested record cannot overflow the stack.
 */
export function findUnstorableString(root: unknown): { path: string; reason: "nul_character" | "lone_surrogate" } | undefined {
  const stack: [value: unknown, path: string][] = [[root, ""]];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [value, path] = next;
    if (typeof value === "string") {
      const reason = unstorableString(value);
      if (reason) return { path: path || "(value)", reason };
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push([value[i], `${path}[${i}]`]);
    } else if (typeof value === "object" && value !== null) {
      const entries = Object.entries(value);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i] as [string, unknown];
        const childPath = path ? `${path}.${key}` : key;
        const reason = unstorableString(key);
        if (reason) return { path: `${path ? `${path}.` : ""}(a key)`, reason };
        stack.push([child, childPath]);
      }
    }
  }
  return undefined;
}

/** Text safe to store and to log: NUL and lone surrogates as JSON escapes, at most `max` characters. */
export function storableText(value: string, max = Number.POSITIVE_INFINITY): string {
  const clean = unstorableString(value) === undefined ? value : JSON.stringify(value).slice(1, -1);
  return clean.length <= max ? clean : `${cutAt(clean, max)}… (${clean.length} chars)`;
}

/** The first `max` code units, one fewer if that would split a surrogate pair. */
export function cutAt(text: string, max: number): string {
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}
