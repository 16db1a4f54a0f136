import { codedError } from "../errors.js";

// Whether a parsed body can be kept as it was signed: the stream, the handlers and the event log
// hold the parsed value, so what JSON.parse changes is not what the sender signed.

/** A body with a value the parsed form cannot keep: 400, the sender's event is not silently changed. */
export class UnkeepablePayloadError extends codedError("unkeepable_payload", { status: 400 }) {}

// Cheap pre-checks, so an ordinary event pays two native searches: a number can only change when
// it has 16 or more digits or a 3-digit exponent; a `__proto__` key only where the text says so.
// A JSON number stands after `:`, `,` or `[` (and whitespace): the check looks only there, as a
// hex id's "e123" or a long digit run inside a string matched anywhere sent every such event
// through the exact scan below (about 4 % of the edge's CPU on the bench's events).
const RISKY_NUMBER = /[:,[]\s*-?[\d.]*(?:\d{16}|\d[eE][+-]?\d{3})/;
const NUMBER_TOKEN = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const MAX_QUOTED = 40;

/** The first number literal of JSON `text` (outside strings) whose 64-bit value is not the number written. */
function changedNumber(text: string): string | undefined {
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x22) {
      for (i++; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (c === 0x5c) i++;
        else if (c === 0x22) break;
      }
    } else if (ch === 0x2d || (ch >= 0x30 && ch <= 0x39)) {
      NUMBER_TOKEN.lastIndex = i;
      const token = NUMBER_TOKEN.exec(text)?.[0];
      if (token === undefined) continue;
      i += token.length - 1;
      const value = Number(token);
      if (!Number.isFinite(value)) return token; // overflow: 1e400 → Infinity, stored as null
      const mantissa = token.split(/[eE]/)[0] ?? token;
      if (value === 0 && /[1-9]/.test(mantissa)) return token; // underflow: 1e-400 → 0
      if (/^-?\d+$/.test(token) && !Number.isSafeInteger(value) && BigInt(token) !== BigInt(value)) return token; // a long integer rounded
    }
  }
  return undefined;
}

/** The path of the first `__proto__` key in `value` ($.a.b[0]): a copy of the object drops it or makes it the prototype. */
function protoKeyPath(value: unknown, path: string): string | undefined {
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = protoKeyPath(item, `${path}[${i}]`);
      if (found) return found;
    }
  } else if (typeof value === "object" && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      if (key === "__proto__") return `${path}.__proto__`;
      const found = protoKeyPath(item, `${path}.${key.slice(0, MAX_QUOTED)}`);
      if (found) return found;
    }
  }
  return undefined;
}

/**
 * Throws UnkeepablePayloadError when the parsed `body` of JSON `text` is not what was sent: a
 * number that overflows, underflows to 0 or (an integer) rounds, or a `__proto__` key anywhere.
 */
export function checkKeepable(text: string, body: unknown): void {
  if (RISKY_NUMBER.test(text)) {
    const token = changedNumber(text);
    if (token !== undefined)
      throw new UnkeepablePayloadError(
        `the number ${token.slice(0, MAX_QUOTED)}${token.length > MAX_QUOTED ? "…" : ""} cannot be kept as sent (numbers are kept as 64-bit floats; send it as a string)`,
      );
  }
  if (text.includes("__proto__")) {
    const path = protoKeyPath(body, "$");
    if (path !== undefined) throw new UnkeepablePayloadError(`the key at ${path} cannot be kept (rename it)`);
  }
}
