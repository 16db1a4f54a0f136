/** Longest event id or handler key the event log stores (its writes refuse longer ones). */
export const MAX_ID_LENGTH = 200;

const LONE_SURROGATE = /\p{Cs}/u;
const CONTROL = /\p{Cc}/u;

/**
 * Why `value` cannot be an id the database holds, or undefined when it can: PostgreSQL text
 * cannot hold NUL (`%00` in a URL reached the database and answered 500), a lone surrogate is
 * not text at all, and no stored id has other control characters in it.
 */
export function idProblem(value: string, maxLength = MAX_ID_LENGTH): string | undefined {
  if (value === "") return "must not be empty";
  if (value.length > maxLength) return `must be at most ${maxLength} characters`;
  // In a `u` regex a paired surrogate is one code point: \p{Cs} matches only lone halves.
  if (LONE_SURROGATE.test(value)) return "must be well-formed text (it holds a lone surrogate)";
  const control = CONTROL.exec(value)?.[0];
  if (control !== undefined)
    return `must not hold control characters (U+${(control.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")})`;
  return undefined;
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
