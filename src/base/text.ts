// Text from outside (ids, types, handler keys, messages) as the service holds and shows it: the
// one id rule, making it printable, and cutting it to a bound. Generic, so the edge, the event log,
// the mirror, the console and the CLI share one rule each.

// The one id rule, from the edge to the mirror to the routes: the edge refuses an event whose
// `id` breaks it (events/envelope.ts), the event log and every operator route refuse such a path
// or filter (a 400), and the mirror refuses to write a record whose id breaks it, setting it aside
// in rejected_records instead (mirror-store.ts), so every id the mirror holds is one the routes can
// address. Only the longest length differs: an event id or a handler key is ours to bound (200),
// a record id is the API's (1,000, as far as a URL's worth).

/** Longest event id or handler key the event log stores (its writes refuse longer ones). */
export const MAX_ID_LENGTH = 200;
/** Longest record id (the API's ids: no length of their own, but a URL's worth at most). */
export const MAX_RECORD_ID_LENGTH = 1000;

/** A lone surrogate half (in a `u` regex a paired surrogate is one code point). */
export const LONE_SURROGATE = /\p{Cs}/u;
/** A control character (C0, DEL, C1): what no id, type or handler name may hold. */
export const CONTROL = /\p{Cc}/u;

/**
 * Why `value` cannot be text the database holds and a person reads, or undefined when it can:
 * PostgreSQL text cannot hold NUL (`%00` in a URL reached the database and answered 500), a lone
 * surrogate is not text at all, and no stored id or event type has other control characters in it.
 * An event's `type` is held to this; an id also to `idProblem`.
 */
export function textProblem(value: string, maxLength = MAX_ID_LENGTH): string | undefined {
  if (value === "") return "must not be empty";
  if (value.length > maxLength) return `must be at most ${maxLength} characters`;
  // In a `u` regex a paired surrogate is one code point: \p{Cs} matches only lone halves.
  if (LONE_SURROGATE.test(value)) return "must be well-formed text (it holds a lone surrogate)";
  const control = CONTROL.exec(value)?.[0];
  if (control !== undefined)
    return `must not hold control characters (U+${(control.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")})`;
  return undefined;
}

/**
 * Why `value` cannot be an id, or undefined when it can: the one rule (above). Text the database
 * holds (`textProblem`), and not "." or "..": URL parsing removes those (and `%2E`, `%2E%2E`) as
 * dot segments before any route sees the path, so `/records/orders/..` arrives as
 * `/records/orders/` and `/events/./replay` as the bulk `/events/replay`. Such an id could never
 * be opened, replayed or shown alone, however it is encoded.
 */
export function idProblem(value: string, maxLength = MAX_ID_LENGTH): string | undefined {
  if (value === "." || value === "..") return 'must not be "." or ".." (a URL cannot address them)';
  return textProblem(value, maxLength);
}

// C0 and C1 controls, DEL, the line and paragraph separators and the bidi overrides and isolates:
// characters that move a terminal's cursor, change its colours or title, or reorder what a page
// or a terminal shows (U+202E turns "evt_gpj.exe" around). A backslash too, so an escape shown
// here is never mistaken for one sent as text.
// eslint-disable-next-line no-control-regex
const UNPRINTABLE = /[\\\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

function escapeChar(char: string): string {
  if (char === "\\") return "\\\\";
  const code = char.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
}

/**
 * An id (or a type, a handler key: text a sender or a handler wrote) as a person may see it, in
 * a console page, an error message or a terminal line: every control and bidi character spelled
 * out as `\xHH` / `\uHHHH`, a backslash doubled. Plain text passes through unchanged.
 */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, escapeChar);
}

/** `text` as a line shows it: whole up to `max` code units, else cut there (cutAt) and marked with "…". */
export const shortened = (text: string, max: number): string => (text.length > max ? `${cutAt(text, max)}…` : text);

/** The first `max` code units, one fewer if that would split a surrogate pair. */
export function cutAt(text: string, max: number): string {
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}

/**
 * Text from outside as one line holds it (a stored cause, an answer's start in a log line): runs of
 * white space as one space, printable, and at most `max` code units, the last an "…" when cut.
 */
export function oneLine(text: string, max: number): string {
  const line = printable(text.replace(/\s+/g, " ").trim());
  return line.length <= max ? line : `${cutAt(line, max - 1)}…`;
}
