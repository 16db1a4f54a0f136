import { cutAt, LONE_SURROGATE } from "../base/text.js";

/**
 * An event's status as people are shown it (the console, the CLI): the event log says `received`
 * for an event whose last attempt failed and will be retried, shown as retrying.
 */
export const shownStatus = (status: string) => (status === "received" ? "retrying" : status);

/** The inverse of shownStatus: a status as people give it (a filter's `retrying`) in the event log's terms (`received`). */
export const loggedStatus = <S extends string | undefined>(status: S) => (status === "retrying" ? "received" : status);

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

const PG_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-](\d{2}):?(\d{2}))?)?$/;
const TIME = /^(\d{2}):(\d{2})(?::(\d{2}))?$/;

const inRange = (text: string | undefined, max: number) => text === undefined || Number(text) <= max;

/** `YYYY-MM-DD`, a real calendar day in the years 0001–9999 (2026-02-30 is none): record fields, backfill's `--since` and the operator API's. */
export function isCalendarDate(value: string): boolean {
  const m = DATE_ONLY.exec(value);
  return m !== null && calendarProblem(Number(m[1]), Number(m[2]), Number(m[3])) === undefined;
}

/**
 * An ISO-8601 timestamp PostgreSQL stores as written: `YYYY-MM-DD[THH:MM[:SS[.fff]][Z|±HH[:]MM]]`
 * with a real calendar day, hours 0–23, minutes and seconds 0–59 and a zone offset under 16 h.
 * (`Date.parse` accepts 2026-02-30 and turns it into 2 March; PostgreSQL refuses it.)
 */
export function isTimestamp(value: string): boolean {
  const m = PG_TIMESTAMP.exec(value);
  if (m === null || calendarProblem(Number(m[1]), Number(m[2]), Number(m[3])) !== undefined) return false;
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

// A page cursor (the event log's, the mirror's): its text as UTF-8 in base64url, opaque to callers.

/** The cursor carrying `text`. */
export const toCursor = (text: string): string => Buffer.from(text, "utf8").toString("base64url");

/** The text a cursor carries, when `cursor` is base64url text of at most `maxChars` characters; else undefined. */
export const cursorText = (cursor: string, maxChars: number): string | undefined =>
  cursor.length <= maxChars && /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, "base64url").toString("utf8") : undefined;

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
const MIN_YEAR = 1;
const MAX_YEAR = 9999;

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

/** A Date that names an instant (not an Invalid Date), whatever a JavaScript caller passed. */
export const isValidDate = (value: unknown): value is Date => value instanceof Date && !Number.isNaN(value.getTime());

/** A Date a library caller passed: valid and within the years PostgreSQL and the cursors hold. */
export function isStorableDate(value: unknown): value is Date {
  if (!isValidDate(value)) return false;
  const year = value.getUTCFullYear();
  return year >= MIN_YEAR && year <= MAX_YEAR;
}

/**
 * The key of the escaped form of an event payload in the event log: `{"$svc_escaped_json": "<the
 * payload as JSON text>"}`. PostgreSQL's jsonb refuses `\u0000` and unpaired surrogates in any
 * string (or key), both of which JSON allows and a signed delivery may carry; as JSON *text* inside
 * a jsonb string they are plain characters, so the payload is kept losslessly and read back as sent.
 */
export const ESCAPED_PAYLOAD_KEY = "$svc_escaped_json";

// A JSON escape jsonb refuses, `\u0000` or `\ud800`–`\udfff`, that is not itself an escaped
// backslash followed by "u…" (an even run of backslashes before it). JSON.stringify writes a lone
// surrogate as such an escape and a valid pair as the characters, so a hit is a payload jsonb refuses.
const JSONB_REFUSES = /(?<!\\)(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/i;

/**
 * Whether a payload serialized as `json` must be stored in the escaped form: it holds an escape
 * jsonb refuses, or it is itself shaped like the escaped form (stored escaped too, so reading it
 * back never mistakes it for one). The costly test runs only on JSON holding a `\u` at all.
 */
export function needsEscapedForm(payload: unknown, json: string): boolean {
  return (json.includes("\\u") && JSONB_REFUSES.test(json)) || isEscapedForm(payload);
}

/** The escaped form of a payload (see ESCAPED_PAYLOAD_KEY). */
export function toEscapedForm(payloadJson: string): Record<string, string> {
  return { [ESCAPED_PAYLOAD_KEY]: payloadJson };
}

/** A stored payload as it was delivered: the escaped form parsed back, anything else as is. */
export function fromStoredPayload(stored: unknown): unknown {
  return isEscapedForm(stored) ? (JSON.parse(stored[ESCAPED_PAYLOAD_KEY]) as unknown) : stored;
}

function isEscapedForm(value: unknown): value is Record<typeof ESCAPED_PAYLOAD_KEY, string> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const record = value as Record<string, unknown>;
  if (typeof record[ESCAPED_PAYLOAD_KEY] !== "string") return false;
  for (const key in record) if (key !== ESCAPED_PAYLOAD_KEY) return false;
  return true;
}

// \u0000, or a surrogate without its pair (no `u` flag: the regex sees code units).
// eslint-disable-next-line no-control-regex
const UNSTORABLE_CHARS = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * Free text (an error message, a stack) that jsonb can store: a \u0000 becomes the six characters
 * `\u0000`, an unpaired surrogate U+FFFD. Lossy, for text that is read, never replayed.
 */
export function storableFreeText(text: string): string {
  return text.replace(UNSTORABLE_CHARS, (c) => (c === "\u0000" ? "\\u0000" : "\ufffd"));
}
