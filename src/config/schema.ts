import * as z from "zod";
import { isApiKey } from "../upstream/api-key.js";
import { DEFAULTS } from "./defaults.js";

const int = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z.coerce
    .number({ error: "must be a whole number" })
    .int("must be a whole number")
    .min(min, `must be at least ${min}`)
    .max(max, `must be at most ${max}`);

/** A share of the rate budget: more than 0, at most 1. */
const share = () => z.coerce.number({ error: "must be a number" }).gt(0, "must be more than 0").max(1, "must be at most 1");

/** Secrets: the schema's messages never include the value (zod's defaults do not either). */
const secretList = z
  .string({ error: "is required" })
  .transform((s) => s.split(",").map((part) => part.trim()))
  .refine((parts) => parts.every((p) => p.length > 0), "must be a comma-separated list of non-empty secrets");

const optionalSecret = (message: string, test: (s: string) => boolean) =>
  z
    .string()
    .optional()
    .transform((s) => (s === "" ? undefined : s))
    .refine((s) => s === undefined || test(s), message);

export const ROLES = ["all", "web", "worker"] as const;
export type Role = (typeof ROLES)[number];

export const configSchema = z.object({
  ROLE: z.enum(ROLES, { error: `must be one of ${ROLES.join(", ")}` }).default("all"),
  HOST: z.string().min(1).default("127.0.0.1"),
  PORT: int(0, 65535).default(3000),
  REDIS_URL: z.url({ protocol: /^rediss?$/, error: "must be a redis:// or rediss:// URL" }).default("redis://127.0.0.1:6379"),
  REDIS_CLUSTER: z
    .enum(["true", "false"], { error: "must be true or false" })
    .default("false")
    .transform((v) => v === "true"),
  QUEUE_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_{}-]+$/, "may hold letters, digits, _ - { } only")
    .default(DEFAULTS.queuePrefix),
  SIGNING_SECRET: secretList.optional(),
  MAX_BODY_BYTES: int(1, 64 * 1024 * 1024).default(1024 * 1024),
  DEDUP_WINDOW_SECONDS: int(1).default(7 * 24 * 3600),
  KEEP_COMPLETED_JOBS: int(0).default(1000),
  KEEP_COMPLETED_SECONDS: int(0).default(3600),
  KEEP_FAILED_JOBS: int(0).default(10_000),
  KEEP_FAILED_SECONDS: int(0).default(14 * 24 * 3600),
  MAX_BUFFERED_BODY_BYTES: int(1, 4 * 1024 * 1024 * 1024).default(DEFAULTS.maxBufferedBodyBytes),
  HTTP_REQUEST_TIMEOUT_MS: int(100, 300_000).default(DEFAULTS.httpRequestTimeoutMs),
  HTTP_HEADERS_TIMEOUT_MS: int(100, 300_000).default(DEFAULTS.httpHeadersTimeoutMs),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: int(0, 600_000).default(DEFAULTS.httpKeepAliveTimeoutMs),
  HTTP_MAX_CONNECTIONS: int(1, 1_000_000).default(DEFAULTS.httpMaxConnections),
  HTTP_MAX_HEADER_BYTES: int(1024, 64 * 1024).default(DEFAULTS.httpMaxHeaderBytes),
  ENQUEUE_TIMEOUT_MS: int(100, 9000).default(2000),
  MAX_BACKLOG: int(1).default(100_000),
  INGEST_BATCH_SIZE: int(1, 5000).default(500),
  INGEST_CLAIM_IDLE_MS: int(100).default(30_000),
  // Drain, then 5 s at most for the closes and the exit: 25 s in all, inside fly's kill_timeout (30 s).
  SHUTDOWN_TIMEOUT_MS: int(0).default(DEFAULTS.shutdownTimeoutMs),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  API_BASE_URL: z.url({ protocol: /^https?$/, error: "must be an http:// or https:// URL" }).optional(),
  API_KEY: optionalSecret("must start with svc_live_ followed by the key body", isApiKey),
  ADMIN_TOKEN: optionalSecret("must be at least 16 characters", (s) => s.length >= 16),
  HANDLERS_MODULE: z.string().min(1).optional(),
  API_RATE: int(1).default(DEFAULTS.apiRate),
  API_RATE_WINDOW_SECONDS: int(1).default(DEFAULTS.apiRateWindowMs / 1000),
  API_RATE_SAFETY_MS: int(0).default(DEFAULTS.apiRateSafetyMs),
  API_TIMEOUT_MS: int(100).default(DEFAULTS.apiTimeoutMs),
  WORKER_CONCURRENCY: int(1, 1000).default(10),
  JOB_ATTEMPTS: int(1, 100).default(DEFAULTS.jobAttempts),
  JOB_BACKOFF_MS: int(1).default(DEFAULTS.jobBackoffMs),
  JOB_LOCK_MS: int(1000).default(DEFAULTS.jobLockMs),
  JOB_MAX_STALLS: int(1, 100).default(DEFAULTS.jobMaxStalls),
  HANDLER_TIMEOUT_MS: int(0, 24 * 3600 * 1000).default(DEFAULTS.handlerTimeoutMs),
  WORKER_MAX_INFLIGHT_BYTES: int(1024).default(DEFAULTS.workerMaxInflightBytes),
  SYNC_DEBOUNCE_MS: int(0, 60_000).default(1000),
  SYNC_UNLISTED_GIVE_UP_SECONDS: int(1).default(DEFAULTS.syncUnlistedGiveUpSeconds),
  SYNC_REFRESH_MAX_PAGES: int(1, 10_000).default(DEFAULTS.syncRefreshMaxPages),
  SYNC_REFRESH_PACE_SHARE: share().default(DEFAULTS.syncRefreshPaceShare),
  SYNC_REFRESH_PACE_MAX_WAIT_MS: int(0, 60_000).default(DEFAULTS.syncRefreshPaceMaxWaitMs),
  SYNC_BOOKINGS_UPPER_BOUND_PARAM: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9_]{0,63}$/, "must be a query parameter name (letters, digits, _)")
    .default(DEFAULTS.syncBookingsUpperBoundParam),
  RECONCILE_INTERVAL_SECONDS: int(0).default(3600),
  RECONCILE_ACTIVE_INTERVAL_SECONDS: int(0).default(120),
  RECONCILE_FULL_SLICE_PAGES: int(1, 10_000).default(30),
  SYNC_CATCHUP_HORIZON_HOURS: int(0, 24 * 31).default(24),
  SYNC_WATCH_INTERVAL_SECONDS: int(1, 3600).default(15),
  CHANGE_RELAY_INTERVAL_MS: int(0, 600_000).default(1000),
  // The URL may carry a password: messages never echo it (zod's own do not either).
  DATABASE_URL: optionalSecret("must be a postgres:// or postgresql:// URL", (s) => /^postgres(ql)?:\/\//.test(s) && URL.canParse(s)),
  DATA_DIR: z.string().min(1).default("./.data"),
  DATABASE_SCHEMA: z
    .string()
    .regex(/^(?!pg_)[a-z_][a-z0-9_]{0,62}$/, "must be a lower-case SQL identifier (letters, digits, _), not starting with pg_")
    .default("svc"),
  EVENT_RETENTION_DAYS: int(1).default(30),
  OPERATOR_QUERY_TIMEOUT_MS: int(100, 600_000).default(DEFAULTS.operatorQueryTimeoutMs),
  API_MAX_PAGE_BYTES: int(64 * 1024, 1024 * 1024 * 1024).default(DEFAULTS.apiMaxPageBytes),
  BULK_REPLAY_CONFIRM_ABOVE: int(0).default(DEFAULTS.bulkReplayConfirmAbove),
});

export type EnvInput = z.input<typeof configSchema>;
