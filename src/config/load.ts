import { hashTagOf } from "../redis/hash-tag.js";
import { configSchema } from "./schema.js";
import type { Config } from "./config.js";
import { failsToDecode, postgresUrlPassword, decodedUrlCredentials } from "./url-credentials.js";

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
  if (parsed.success) problems.push(...limitProblems(parsed.data));
  if (!parsed.success || problems.length > 0) throw new ConfigError([...new Set(problems)]);
  const e = parsed.data;
  return {
    role: e.ROLE,
    host: e.HOST,
    port: e.PORT,
    redisUrl: e.REDIS_URL,
    redisCluster: e.REDIS_CLUSTER,
    queuePrefix: e.REDIS_CLUSTER ? clusterPrefix(e.QUEUE_PREFIX) : e.QUEUE_PREFIX,
    signingSecrets: e.SIGNING_SECRET ?? [],
    maxBodyBytes: e.MAX_BODY_BYTES,
    http: {
      requestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_MS,
      headersTimeoutMs: e.HTTP_HEADERS_TIMEOUT_MS,
      keepAliveTimeoutMs: e.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      maxConnections: e.HTTP_MAX_CONNECTIONS,
      maxHeaderBytes: e.HTTP_MAX_HEADER_BYTES,
      maxBufferedBodyBytes: e.MAX_BUFFERED_BODY_BYTES,
    },
    dedupWindowSeconds: e.DEDUP_WINDOW_SECONDS,
    retention: {
      completed: { count: e.KEEP_COMPLETED_JOBS, ageSeconds: e.KEEP_COMPLETED_SECONDS },
      failed: { count: e.KEEP_FAILED_JOBS, ageSeconds: e.KEEP_FAILED_SECONDS },
    },
    enqueueTimeoutMs: e.ENQUEUE_TIMEOUT_MS,
    ingest: { maxBacklog: e.MAX_BACKLOG, batchSize: e.INGEST_BATCH_SIZE, claimIdleMs: e.INGEST_CLAIM_IDLE_MS },
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    logLevel: e.LOG_LEVEL,
    ...(e.API_BASE_URL && e.API_KEY
      ? {
          api: {
            baseUrl: e.API_BASE_URL,
            apiKey: e.API_KEY,
            rate: e.API_RATE,
            rateWindowMs: e.API_RATE_WINDOW_SECONDS * 1000,
            rateSafetyMs: e.API_RATE_SAFETY_MS,
            timeoutMs: e.API_TIMEOUT_MS,
            maxPageBytes: e.API_MAX_PAGE_BYTES,
          },
        }
      : {}),
    worker: {
      concurrency: e.WORKER_CONCURRENCY,
      attempts: e.JOB_ATTEMPTS,
      backoffMs: e.JOB_BACKOFF_MS,
      lockMs: e.JOB_LOCK_MS,
      maxStalls: e.JOB_MAX_STALLS,
      handlerTimeoutMs: e.HANDLER_TIMEOUT_MS,
      maxInflightBytes: e.WORKER_MAX_INFLIGHT_BYTES,
      syncDebounceMs: e.SYNC_DEBOUNCE_MS,
      syncUnlistedGiveUpMs: e.SYNC_UNLISTED_GIVE_UP_SECONDS * 1000,
      syncRefreshMaxPages: e.SYNC_REFRESH_MAX_PAGES,
      syncRefreshPaceShare: e.SYNC_REFRESH_PACE_SHARE,
      syncRefreshPaceMaxWaitMs: e.SYNC_REFRESH_PACE_MAX_WAIT_MS,
      syncBookingsUpperBoundParam: e.SYNC_BOOKINGS_UPPER_BOUND_PARAM,
      reconcileIntervalMs: e.RECONCILE_INTERVAL_SECONDS * 1000,
      reconcileActiveIntervalMs: e.RECONCILE_ACTIVE_INTERVAL_SECONDS * 1000,
      reconcileFullSlicePages: e.RECONCILE_FULL_SLICE_PAGES,
      syncCatchUpHorizonMs: e.SYNC_CATCHUP_HORIZON_HOURS * 3600_000,
      syncWatchIntervalMs: e.SYNC_WATCH_INTERVAL_SECONDS * 1000,
      changeRelayIntervalMs: e.CHANGE_RELAY_INTERVAL_MS,
    },
    database: { url: e.DATABASE_URL, dataDir: e.DATA_DIR, schema: e.DATABASE_SCHEMA, operatorQueryTimeoutMs: e.OPERATOR_QUERY_TIMEOUT_MS },
    eventRetentionDays: e.EVENT_RETENTION_DAYS,
    bulkReplayConfirmAbove: e.BULK_REPLAY_CONFIRM_ABOVE,
    adminToken: e.ADMIN_TOKEN,
    handlersModule: e.HANDLERS_MODULE,
  };
}

/** Rules between variables, checked on the raw input so they are reported with every other problem. */
function crossFieldProblems(input: Record<string, string | undefined>): string[] {
  const problems: string[] = [];
  const role = input.ROLE ?? "all";
  if (role !== "worker" && !input.SIGNING_SECRET) problems.push(`SIGNING_SECRET is required when ROLE is ${role}`);
  if (input.API_BASE_URL && !input.API_KEY) problems.push("API_KEY is required when API_BASE_URL is set");
  if (input.API_KEY && !input.API_BASE_URL) problems.push("API_BASE_URL is required when API_KEY is set");
  if (input.REDIS_CLUSTER === "true") problems.push(...clusterProblems(input));
  problems.push(...urlCredentialProblems(input));
  return problems;
}

/**
 * A URL whose user name or password the client cannot percent-decode would crash start-up with a
 * bare URIError. DATABASE_URL is read as pg reads it (a `%` that starts no escape is a literal
 * `%`), so only what pg itself refuses is reported; ioredis decodes strictly, so REDIS_URL must
 * write a literal `%` as `%25`. Never echoes the value.
 */
function urlCredentialProblems(input: Record<string, string | undefined>): string[] {
  const problems: string[] = [];
  const { DATABASE_URL: db, REDIS_URL: redis } = input;
  if (db && URL.canParse(db) && failsToDecode(() => postgresUrlPassword(db)))
    problems.push("DATABASE_URL has a password that is not valid percent-encoding (a %-escape of bytes that are not UTF-8)");
  if (redis && URL.canParse(redis) && failsToDecode(() => decodedUrlCredentials(redis)))
    problems.push("REDIS_URL has a user name or password with a % that is not percent-encoding: write a literal % as %25");
  return problems;
}

/**
 * On a Redis Cluster every key of one BullMQ queue must share a slot, so the prefix needs a hash
 * tag. A plain prefix is wrapped (`svc` → `{svc}`); one that has braces but no usable tag (`{svc`,
 * `{}svc`) is refused rather than guessed at.
 */
function clusterProblems(input: Record<string, string | undefined>): string[] {
  const problems: string[] = [];
  const prefix = input.QUEUE_PREFIX;
  if (prefix && /[{}]/.test(prefix) && hashTagOf(prefix) === undefined) {
    problems.push(
      "QUEUE_PREFIX needs a hash tag such as {svc} (a non-empty {…}) when REDIS_CLUSTER is true; or give it without braces to have it wrapped",
    );
  }
  const redisUrl = input.REDIS_URL ?? "";
  const db = URL.canParse(redisUrl) ? new URL(redisUrl).pathname.replace(/^\//, "") : "";
  if (db !== "" && db !== "0")
    problems.push("REDIS_URL may not select a database (/N) when REDIS_CLUSTER is true: a Redis Cluster has only database 0");
  return problems;
}

function clusterPrefix(prefix: string): string {
  return hashTagOf(prefix) === undefined ? `{${prefix}}` : prefix;
}

/** Rules between limits, checked on parsed values so defaults take part. */
function limitProblems(e: {
  HTTP_HEADERS_TIMEOUT_MS: number;
  HTTP_REQUEST_TIMEOUT_MS: number;
  MAX_BUFFERED_BODY_BYTES: number;
  MAX_BODY_BYTES: number;
}): string[] {
  const problems: string[] = [];
  // Node refuses a header timeout above the request timeout.
  if (e.HTTP_HEADERS_TIMEOUT_MS > e.HTTP_REQUEST_TIMEOUT_MS)
    problems.push("HTTP_HEADERS_TIMEOUT_MS must be at most HTTP_REQUEST_TIMEOUT_MS");
  if (e.MAX_BUFFERED_BODY_BYTES < e.MAX_BODY_BYTES)
    problems.push("MAX_BUFFERED_BODY_BYTES must be at least MAX_BODY_BYTES, or no body of the largest size is ever accepted");
  return problems;
}

/**
 * Every secret value in a config, for the logger's last-line scrubber: the signing secrets, API
 * key and admin token, and each URL that carries a password (DATABASE_URL, REDIS_URL,
 * API_BASE_URL) whole, with its password both as written and as decoded.
 */
export function secretsOf(config: Config): string[] {
  const db = config.database.url;
  return [
    ...config.signingSecrets,
    config.api?.apiKey,
    config.adminToken,
    db,
    ...(db ? urlSecrets(db, postgresUrlPassword) : []),
    ...urlSecrets(config.redisUrl, (u) => decodedUrlCredentials(u).password),
    ...(config.api ? urlSecrets(config.api.baseUrl, (u) => decodedUrlCredentials(u).password) : []),
  ].filter((s): s is string => !!s);
}

/** A URL and its password (raw and decoded), when it has one. */
function urlSecrets(url: string, decodedPassword: (url: string) => string): string[] {
  const raw = URL.canParse(url) ? new URL(url).password : "";
  if (raw === "") return [];
  // A password that does not decode (only possible where no check above refused it) is scrubbed as written.
  return failsToDecode(() => decodedPassword(url)) ? [url, raw] : [url, raw, decodedPassword(url)];
}
