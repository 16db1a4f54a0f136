import { configSchema } from "./schema.js";
import type { Config } from "./config.js";

export class ConfigError extends Error {
  readonly code = "invalid_config";
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

/**
 * Parses the environment once. Throws a ConfigError naming every wrong variable; messages never
 * contain the values given (secrets stay out of logs and terminals).
 */
export function loadConfig(env: Record<string, string | undefined>): Config {
  // Empty strings count as unset, as in most .env tooling.
  const input = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ""));
  const parsed = configSchema.safeParse(input);
  const problems = parsed.success ? [] : parsed.error.issues.map((issue) => `${issue.path.join(".") || "environment"} ${issue.message}`);
  problems.push(...crossFieldProblems(input));
  if (!parsed.success || problems.length > 0) throw new ConfigError([...new Set(problems)]);
  const e = parsed.data;
  return {
    role: e.ROLE,
    host: e.HOST,
    port: e.PORT,
    redisUrl: e.REDIS_URL,
    queuePrefix: e.QUEUE_PREFIX,
    signingSecrets: e.SIGNING_SECRET ?? [],
    maxBodyBytes: e.MAX_BODY_BYTES,
    dedupWindowSeconds: e.DEDUP_WINDOW_SECONDS,
    retention: {
      completed: { count: e.KEEP_COMPLETED_JOBS, ageSeconds: e.KEEP_COMPLETED_SECONDS },
      failed: { count: e.KEEP_FAILED_JOBS, ageSeconds: e.KEEP_FAILED_SECONDS },
    },
    enqueueTimeoutMs: e.ENQUEUE_TIMEOUT_MS,
    ingest: { maxBacklog: e.MAX_BACKLOG, pumpBatchSize: e.PUMP_BATCH_SIZE, pumpClaimIdleMs: e.PUMP_CLAIM_IDLE_MS },
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    logLevel: e.LOG_LEVEL,
    ...(e.API_BASE_URL && e.API_KEY
      ? { api: { baseUrl: e.API_BASE_URL, apiKey: e.API_KEY, rate: e.API_RATE, rateWindowMs: e.API_RATE_WINDOW_SECONDS * 1000, rateSafetyMs: e.API_RATE_SAFETY_MS, timeoutMs: e.API_TIMEOUT_MS } }
      : {}),
    worker: {
      concurrency: e.WORKER_CONCURRENCY,
      attempts: e.JOB_ATTEMPTS,
      backoffMs: e.JOB_BACKOFF_MS,
      lockMs: e.JOB_LOCK_MS,
      maxStalls: e.JOB_MAX_STALLS,
      syncDebounceMs: e.SYNC_DEBOUNCE_MS,
      reconcileIntervalMs: e.RECONCILE_INTERVAL_SECONDS * 1000,
    },
    ...(e.ADMIN_TOKEN ? { adminToken: e.ADMIN_TOKEN } : {}),
    ...(e.HANDLERS_MODULE ? { handlersModule: e.HANDLERS_MODULE } : {}),
  };
}

/** Rules between variables, checked on the raw input so they are reported with every other problem. */
function crossFieldProblems(input: Record<string, string | undefined>): string[] {
  const problems: string[] = [];
  const role = input.ROLE ?? "all";
  if (role !== "worker" && !input.SIGNING_SECRET) problems.push(`SIGNING_SECRET is required when ROLE is ${role}`);
  if (input.API_BASE_URL && !input.API_KEY) problems.push("API_KEY is required when API_BASE_URL is set");
  if (input.API_KEY && !input.API_BASE_URL) problems.push("API_BASE_URL is required when API_KEY is set");
  return problems;
}

/** Every secret value in a config, for the logger's last-line scrubber. */
export function secretsOf(config: Config): string[] {
  return [...config.signingSecrets, config.api?.apiKey, config.adminToken].filter((s): s is string => !!s);
}
