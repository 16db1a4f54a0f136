// Exponential backoff, the one formula every retry of the service waits by: the upstream client's
// retries (with full jitter), the embedded database's restarts and an unlisted id's next look.

/** `baseMs`·2^`attempt`, at most `capMs`; `attempt` counts from 0. */
export const exponentialDelayMs = (attempt: number, baseMs: number, capMs: number): number => Math.min(capMs, baseMs * 2 ** attempt);

/**
 * Full-jitter exponential backoff (AWS architecture blog): a uniform delay in
 * [0, min(cap, base·2^attempt)), so clients that failed together do not retry together.
 * `attempt` counts from 0.
 */
export function backoffMs(attempt: number, baseMs: number, capMs = 30_000, random: () => number = Math.random): number {
  return Math.floor(random() * exponentialDelayMs(attempt, baseMs, capMs));
}
