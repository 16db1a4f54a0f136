/**
 * The API's per-key limit (docs/upstream.md): a sliding window over the requests it accepted.
 * Returns 0 when the request is accepted (and counts it), else the Retry-After in seconds.
 */
export function createKeyRateLimit(max: number, windowMs: number, now: () => number = Date.now) {
  const accepted = new Map<string, number[]>();
  return function admit(key: string): number {
    const t = now();
    const log = (accepted.get(key) ?? []).filter((at) => at > t - windowMs);
    accepted.set(key, log);
    if (log.length < max) {
      log.push(t);
      return 0;
    }
    // With max 0 nothing was ever accepted: wait a whole window.
    const oldest = log[0] ?? t;
    return Math.max(1, Math.ceil((oldest + windowMs - t) / 1000));
  };
}
