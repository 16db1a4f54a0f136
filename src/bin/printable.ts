// C0 and C1 controls, DEL, the line and paragraph separators and the bidi overrides and isolates:
// characters that move a terminal's cursor, change its colours or title, or reorder what it
// shows. A backslash too, so an escape printed here is never mistaken for one sent as text.
// eslint-disable-next-line no-control-regex
const UNPRINTABLE = /[\\\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

function escape(char: string): string {
  if (char === "\\") return "\\\\";
  const code = char.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
}

/**
 * Text from the event log or a queue (ids, types, failure reasons: what a sender or a handler
 * wrote) made safe to print on one line of a terminal: every control character spelled out as
 * `\xHH` / `\uHHHH`, a backslash doubled. Plain text passes through unchanged.
 */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, escape);
}
