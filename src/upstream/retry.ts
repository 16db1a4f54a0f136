// Pure timing rules of the client: how long a 429 asks us to wait, and how long to back off
// before re-sending a read. No I/O here, so both are unit-tested exactly.

/** The three HTTP-date forms a recipient must accept (RFC 9110 §5.6.7). */
const IMF_FIXDATE = /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/;
const RFC_850 = /^[A-Z][a-z]+, \d{2}-[A-Z][a-z]{2}-\d{2} \d{2}:\d{2}:\d{2} GMT$/;
const ASCTIME = /^[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/;

export interface RetryAfterOptions {
  /** The clock, epoch ms (for an HTTP date). */
  now?: number;
  /** Used when the header is missing or garbled. @defaultValue 1000 */
  fallbackMs?: number;
  /** A bogus header must not stop every process for days. @defaultValue 300_000 */
  maxMs?: number;
}

/**
 * `Retry-After` in ms: delta-seconds or an HTTP date; `fallbackMs` when missing or garbled.
 * The date forms are matched exactly because `Date.parse` accepts nearly anything ("-5" is a date).
 */
export function parseRetryAfter(value: string | null | undefined, options: RetryAfterOptions = {}): number {
  const { now = Date.now(), fallbackMs = 1000, maxMs = 300_000 } = options;
  const text = value?.trim() ?? "";
  let ms: number;
  if (/^\d+$/.test(text)) ms = Number(text) * 1000;
  else if (IMF_FIXDATE.test(text) || RFC_850.test(text)) ms = Math.max(0, Date.parse(text) - now);
  // asctime carries no zone but is UTC; Date.parse would read it as local time.
  else if (ASCTIME.test(text)) ms = Math.max(0, Date.parse(`${text} GMT`) - now);
  else return fallbackMs;
  return Math.min(ms, maxMs);
}

/**
 * Full-jitter exponential backoff (AWS architecture blog): a uniform delay in
 * [0, min(cap, base·2^attempt)), so clients that failed together do not retry together.
 * `attempt` counts from 0.
 */
export function backoffMs(attempt: number, baseMs: number, capMs = 30_000, random: () => number = Math.random): number {
  return Math.floor(random() * Math.min(capMs, baseMs * 2 ** attempt));
}
