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
// Pure functions: unit-tested without a database. Dates and times: base/iso-time.ts.

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
