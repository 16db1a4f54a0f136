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
