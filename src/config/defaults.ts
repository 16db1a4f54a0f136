/**
 * Defaults shared by the config schema and the library factories (which can be used without a
 * config): one home for each, so a factory's fallback never drifts from the service's default.
 */
export const DEFAULTS = {
  queuePrefix: "svc",
  apiRate: 120,
  apiRateWindowMs: 60_000,
  apiRateSafetyMs: 1000,
  apiTimeoutMs: 10_000,
  jobAttempts: 10,
  jobBackoffMs: 1000,
  jobLockMs: 30_000,
  jobMaxStalls: 5,
} as const;
