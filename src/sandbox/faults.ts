/** Failure injection, as data (like stripe sync-engine's test sandbox). */
export interface FaultRule {
  method?: string;
  /** Prefix of the pathname, e.g. "/api/v1/orders". */
  path: string;
  /** Answer this status with an error body. */
  status?: number;
  /** With status 429: the Retry-After value. */
  retryAfterSeconds?: number;
  /** Wait this long before answering (to exceed a client's timeout). */
  delayMs?: number;
  /** Skip the first `after` matching requests. */
  after?: number;
  /** Apply to this many matching requests, then expire; unlimited when absent. */
  times?: number;
}

export function createFaults() {
  let rules: { rule: FaultRule; seen: number; applied: number }[] = [];
  return {
    add(rule: FaultRule) {
      rules.push({ rule, seen: 0, applied: 0 });
    },
    clear() {
      rules = [];
    },
    /** The rule to apply to this request, if any (counting it). */
    match(method: string, path: string): FaultRule | undefined {
      for (const entry of rules) {
        const { rule } = entry;
        if (rule.method && rule.method.toUpperCase() !== method) continue;
        if (!path.startsWith(rule.path)) continue;
        entry.seen++;
        if (entry.seen <= (rule.after ?? 0)) continue;
        if (rule.times !== undefined && entry.applied >= rule.times) continue;
        entry.applied++;
        return rule;
      }
      return undefined;
    },
  };
}
