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
export function storableText(text: string): string {
  return text.replace(UNSTORABLE_CHARS, (c) => (c === "\u0000" ? "\\u0000" : "\ufffd"));
}
