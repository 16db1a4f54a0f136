import * as z from "zod";
import { codedError } from "../errors.js";
import { standardSecretProblem } from "../base/standard-webhooks.js";
import { DEFAULTS } from "./defaults.js";
import { hashTagOf } from "../base/hash-tag.js";
import { API_KEY_FORM, isApiKey } from "../base/api-key.js";

/** The service's configuration, parsed once at start (see loadConfig). */
export type Config = ReturnType<typeof configFrom>;
/** What the HTTP server tolerates from clients (slow, many, large); see docs/security.md. */
export type HttpLimits = Config["http"];

const int = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z.coerce
    .number({ error: "must be a whole number" })
    .int("must be a whole number")
    .min(min, `must be at least ${min}`)
    .max(max, `must be at most ${max}`);

/** A share of the rate budget: more than 0, at most 1. */
const share = () => z.coerce.number({ error: "must be a number" }).gt(0, "must be more than 0").max(1, "must be at most 1");

/** What a list of secrets must be (SIGNING_SECRET's rule, told by the schema and by dev). */
export const SECRET_LIST_RULE = "must be a comma-separated list of non-empty secrets";

/** Secrets: the schema's messages never include the value (zod's defaults do not either). */
const secretList = z
  .string({ error: "is required" })
  .transform((s) => s.split(",").map((part) => part.trim()))
  .refine((parts) => parts.every((p) => p.length > 0), SECRET_LIST_RULE);

const optionalSecret = (message: string, test: (s: string) => boolean) =>
  z
    .string()
    .optional()
    .transform((s) => (s === "" ? undefined : s))
    .refine((s) => s === undefined || test(s), message);

/** SECRETS_KEY's 32 bytes, written as 64 hex digits or in base64 (`openssl rand -base64 32`); undefined when it is neither. */
function secretsKeyBytes(text: string): Buffer | undefined {
  const bytes = /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, "hex") : Buffer.from(text, "base64");
  return bytes.length === 32 && (text.length === 64 || bytes.toString("base64") === text) ? bytes : undefined;
}

/** How a problem notification's body is written (alerts/alert-message.ts): Standard Webhooks JSON, or Slack's incoming-webhook text. */
export const ALERT_FORMATS = ["standard", "slack"] as const;
/** The longest ALERT_WEBHOOK_URL (and an account's alertUrl) taken: room for any real endpoint, bounded like everything stored. */
export const MAX_ALERT_URL_LENGTH = 2048;

/** Where a problem notification may go: ALERT_WEBHOOK_URL's rule, and an account's alertUrl's (mirror/accounts.ts). */
export const alertUrlSchema = z
  .url({ protocol: /^https?$/, error: "must be an http:// or https:// URL" })
  .max(MAX_ALERT_URL_LENGTH, `must be at most ${MAX_ALERT_URL_LENGTH} characters`);

/** How a sender signs its deliveries: `svc` (X-SVC-Signature, the upstream's) or Standard Webhooks (webhook-id, -timestamp, -signature). */
export const SIGNATURE_SCHEMES = ["svc", "standard-webhooks"] as const;
export type SignatureScheme = (typeof SIGNATURE_SCHEMES)[number];

/** Why `secret` cannot sign deliveries under `scheme`, or undefined when it can (never naming the value). */
export function schemeSecretProblem(scheme: SignatureScheme, secret: string): string | undefined {
  return scheme === "standard-webhooks" ? standardSecretProblem(secret) : undefined;
}

export const ROLES = ["all", "web", "worker"] as const;

export const configSchema = z.object({
  ROLE: z.enum(ROLES, { error: `must be one of ${ROLES.join(", ")}` }).default("all"),
  HOST: z.string().min(1).default("127.0.0.1"),
  PORT: int(0, 65535).default(DEFAULTS.port),
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
  SIGNATURE_SCHEME: z.enum(SIGNATURE_SCHEMES, { error: `must be one of ${SIGNATURE_SCHEMES.join(", ")}` }).default("svc"),
  SIGNATURE_TOLERANCE_SECONDS: int(1, 24 * 3600).default(DEFAULTS.signatureToleranceSeconds),
  MAX_BODY_BYTES: int(1, 64 * 1024 * 1024).default(DEFAULTS.maxBodyBytes),
  DEDUP_WINDOW_SECONDS: int(1).default(7 * 24 * 3600),
  KEEP_COMPLETED_JOBS: int(0).default(1000),
  KEEP_COMPLETED_SECONDS: int(0).default(3600),
  KEEP_FAILED_JOBS: int(0).default(10_000),
  KEEP_FAILED_SECONDS: int(0).default(14 * 24 * 3600),
  MAX_BUFFERED_BODY_BYTES: int(1, 4 * 1024 * 1024 * 1024).default(DEFAULTS.maxBufferedBodyBytes),
  BODY_BUDGET_SOURCE_SHARE: share().default(DEFAULTS.bodyBudgetSourceShare),
  HTTP_REQUEST_TIMEOUT_MS: int(100, 300_000).default(DEFAULTS.httpRequestTimeoutMs),
  // Unset: DEFAULTS.httpBodyTimeoutMs, or HTTP_REQUEST_TIMEOUT_MS when that is shorter.
  HTTP_BODY_TIMEOUT_MS: int(100, 300_000).optional(),
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
  HEAP_GROWING_PERCENT: int(0, 1000).default(DEFAULTS.heapGrowingPercent),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  API_BASE_URL: z.url({ protocol: /^https?$/, error: "must be an http:// or https:// URL" }).optional(),
  API_KEY: optionalSecret(API_KEY_FORM, isApiKey),
  ADMIN_TOKEN: optionalSecret("must be at least 16 characters", (s) => s.length >= 16),
  SECRETS_KEY: optionalSecret(
    "must be 32 bytes: 64 hex digits or 44 base64 characters (openssl rand -base64 32)",
    (s) => !!secretsKeyBytes(s),
  ),
  HANDLERS_MODULE: z.string().min(1).optional(),
  API_RATE: int(1).default(DEFAULTS.apiRate),
  API_RATE_WINDOW_SECONDS: int(1).default(DEFAULTS.apiRateWindowMs / 1000),
  API_RATE_SAFETY_MS: int(0).default(DEFAULTS.apiRateSafetyMs),
  API_TIMEOUT_MS: int(100).default(DEFAULTS.apiTimeoutMs),
  WORKER_CONCURRENCY: int(1, 1000).default(10),
  WORKER_CONCURRENCY_PER_ACCOUNT: int(1, 1000).optional(),
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
  SYNC_IMPORT_CHANGE_EVENTS: z
    .enum(["true", "false"], { error: "must be true or false" })
    .default("true")
    .transform((v) => v === "true"),
  RECONCILE_ACTIVE_INTERVAL_SECONDS: int(0).default(120),
  RECONCILE_FULL_SLICE_PAGES: int(1, 10_000).default(300),
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
  // The URL may carry a token (Slack's does, in its path): messages never echo it.
  ALERT_WEBHOOK_URL: alertUrlSchema.optional(),
  ALERT_SIGNING_SECRET: z
    .string()
    .optional()
    .superRefine((secret, ctx) => {
      const problem = secret === undefined ? undefined : standardSecretProblem(secret);
      if (problem) ctx.addIssue({ code: "custom", message: `is not usable: ${problem}` });
    }),
  ALERT_FORMAT: z.enum(ALERT_FORMATS, { error: `must be one of ${ALERT_FORMATS.join(", ")}` }).default("standard"),
});

export class ConfigError extends codedError("invalid_config") {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
  }
}

/**
 * Parses the environment once. Throws a ConfigError naming every wrong variable; messages never
 * contain the values given (secrets stay out of logs and terminals).
 */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const input = Object.fromEntries(Object.entries(env).filter(([, v]) => given(v) !== undefined));
  const parsed = configSchema.safeParse(input);
  const problems = parsed.success ? [] : parsed.error.issues.map((issue) => `${issue.path.join(".") || "environment"} ${issue.message}`);
  problems.push(...crossFieldProblems(input));
  if (parsed.success) problems.push(...limitProblems(parsed.data));
  if (!parsed.success || problems.length > 0) throw new ConfigError([...new Set(problems)]);
  return configFrom(parsed.data, input);
}

/** A variable's value as the schema reads it: an empty string counts as unset, as in most .env tooling. */
const given = (value: string | undefined): string | undefined => (value === "" ? undefined : value);

/**
 * One variable as the schema parses it, for a command that builds no Config of its own (the
 * sandbox's LOG_LEVEL, dev's before it builds the service's): a ConfigError naming it when wrong.
 */
export function configValue<Name extends keyof typeof configSchema.shape>(
  env: Env,
  name: Name,
): z.output<(typeof configSchema.shape)[Name]> {
  const parsed = configSchema.shape[name].safeParse(given(env[name]));
  if (!parsed.success) throw new ConfigError(parsed.error.issues.map((issue) => `${name} ${issue.message}`));
  return parsed.data as z.output<(typeof configSchema.shape)[Name]>;
}

/**
 * The service's configuration from the parsed environment: the shape every module reads (Config).
 * `env` is the raw input, for the OTEL_* variables the OpenTelemetry SDK parses itself.
 */
function configFrom(e: z.output<typeof configSchema>, env: Env) {
  return {
    role: e.ROLE,
    host: e.HOST,
    port: e.PORT,
    /** One Redis, or with `redisCluster` one seed node of a Redis Cluster. */
    redisUrl: e.REDIS_URL,
    /** REDIS_CLUSTER: connect as a Redis Cluster client, starting from the node `redisUrl` names. */
    redisCluster: e.REDIS_CLUSTER,
    /**
     * The prefix of every Redis key (BullMQ's and ours). On a cluster it always holds a hash tag
     * (`svc` is used as `{svc}`), so each queue's keys share one slot, as BullMQ's scripts need.
     */
    queuePrefix: e.REDIS_CLUSTER ? clusterPrefix(e.QUEUE_PREFIX) : e.QUEUE_PREFIX,
    /** Every secret accepted for X-SVC-Signature; more than one during a rotation. */
    signingSecrets: e.SIGNING_SECRET ?? [],
    /** How the env company (POST /webhooks) signs: SIGNING_SECRET's secrets are that scheme's. */
    signatureScheme: e.SIGNATURE_SCHEME,
    /** Standard Webhooks: how far webhook-timestamp may be from now, either way, in seconds. */
    signatureToleranceSeconds: e.SIGNATURE_TOLERANCE_SECONDS,
    maxBodyBytes: e.MAX_BODY_BYTES,
    /** What the HTTP server tolerates from clients (slow, many, large); see docs/security.md. */
    http: {
      /** Whole request (headers and body); past it Node answers 408 and closes. */
      requestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_MS,
      /** Request headers, from the request's first byte; at most requestTimeoutMs. */
      headersTimeoutMs: e.HTTP_HEADERS_TIMEOUT_MS,
      /** How long an idle keep-alive socket stays open (above a load balancer's idle timeout). */
      keepAliveTimeoutMs: e.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      /** Connections beyond this are dropped on accept. */
      maxConnections: e.HTTP_MAX_CONNECTIONS,
      /** Request line and headers together (Node's maxHeaderSize); over it Node answers 431. */
      maxHeaderBytes: e.HTTP_MAX_HEADER_BYTES,
      /** Body bytes buffered across all in-flight requests, counted as they arrive; beyond it the edge answers 503. */
      maxBufferedBodyBytes: e.MAX_BUFFERED_BODY_BYTES,
      /** The most of maxBufferedBodyBytes one account's path or one remote address may hold (at least one body). */
      bodySourceShare: e.BODY_BUDGET_SOURCE_SHARE,
      /** How long a body may take to arrive once its read starts; past it the edge answers 408 and gives its bytes back. */
      bodyTimeoutMs: e.HTTP_BODY_TIMEOUT_MS ?? Math.min(DEFAULTS.httpBodyTimeoutMs, e.HTTP_REQUEST_TIMEOUT_MS),
    },
    dedupWindowSeconds: e.DEDUP_WINDOW_SECONDS,
    /** How many finished jobs to keep, and for how long (Redis memory stays flat). */
    retention: {
      completed: { count: e.KEEP_COMPLETED_JOBS, ageSeconds: e.KEEP_COMPLETED_SECONDS },
      failed: { count: e.KEEP_FAILED_JOBS, ageSeconds: e.KEEP_FAILED_SECONDS },
    },
    /** How long the edge waits for Redis to acknowledge an event before answering 503. */
    enqueueTimeoutMs: e.ENQUEUE_TIMEOUT_MS,
    /** The ingest stream between the edge and the workers (see queue/ingest-stream, queue/stream-consumer). */
    ingest: {
      /** Events waiting in the stream above which the edge answers 503 (backpressure). */
      maxBacklog: e.MAX_BACKLOG,
      /** Most events a worker reads and handles per batch. */
      batchSize: e.INGEST_BATCH_SIZE,
      /** A dead consumer's unacknowledged entries are taken over (into the events queue) after this long. */
      claimIdleMs: e.INGEST_CLAIM_IDLE_MS,
    },
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    /** V8's heap growth past the live set before a full collection, in % (0: V8's own choice). */
    heapGrowingPercent: e.HEAP_GROWING_PERCENT,
    logLevel: e.LOG_LEVEL,
    ...(e.API_BASE_URL && e.API_KEY
      ? {
          /** The upstream API; without it the worker runs handlers but syncs nothing. */
          api: {
            baseUrl: e.API_BASE_URL,
            apiKey: e.API_KEY,
            rate: e.API_RATE,
            rateWindowMs: e.API_RATE_WINDOW_SECONDS * 1000,
            rateSafetyMs: e.API_RATE_SAFETY_MS,
            timeoutMs: e.API_TIMEOUT_MS,
            /** The most bytes one answer (a list page) may have; larger ones are refused unread. */
            maxPageBytes: e.API_MAX_PAGE_BYTES,
          },
        }
      : {}),
    worker: workerConfig(e),
    /** PostgreSQL for the mirror and the event log: a server at `url`, else embedded under `dataDir`. */
    database: {
      // Optional, as callers that name their own database (tests, embedding apps) leave it out.
      ...(e.DATABASE_URL === undefined ? {} : { url: e.DATABASE_URL }),
      dataDir: e.DATA_DIR,
      schema: e.DATABASE_SCHEMA,
      /** Operator reads (GET /events, /mirror) end after this long: a server cancels the statement, the embedded store stops its scan. */
      operatorQueryTimeoutMs: e.OPERATOR_QUERY_TIMEOUT_MS,
    },
    /** Events older than this are pruned from the event log. */
    eventRetentionDays: e.EVENT_RETENTION_DAYS,
    /** A bulk replay matching more events than this needs `"confirm": <count>` (the dry run's count). */
    bulkReplayConfirmAbove: e.BULK_REPLAY_CONFIRM_ABOVE,
    adminToken: e.ADMIN_TOKEN,
    /** SECRETS_KEY, 32 bytes: seals the accounts' API keys and signing secrets (mirror/accounts.ts); without it no account can be added. */
    ...(e.SECRETS_KEY ? { secretsKey: secretsKeyBytes(e.SECRETS_KEY) } : {}),
    handlersModule: e.HANDLERS_MODULE,
    /** Where problem notifications go (src/alerts): the deployment's URL, the secret they are signed with, their body's format. */
    alerts: {
      ...(e.ALERT_WEBHOOK_URL === undefined ? {} : { webhookUrl: e.ALERT_WEBHOOK_URL }),
      ...(e.ALERT_SIGNING_SECRET === undefined ? {} : { signingSecret: e.ALERT_SIGNING_SECRET }),
      format: e.ALERT_FORMAT,
    },
    /** OpenTelemetry (tracing/tracing.ts): whether the standard environment asks for traces, and whether it names the service. */
    tracing: { requested: tracingRequested(env), serviceNamed: env.OTEL_SERVICE_NAME !== undefined },
  };
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Whether the standard environment asks for traces: an OTLP endpoint (for all signals or for
 * traces), not disabled by OTEL_SDK_DISABLED, and OTEL_TRACES_EXPORTER not "none". An empty value
 * counts as unset, as the SDK reads it.
 */
export function tracingRequested(env: Env): boolean {
  if (!env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() && !env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim()) return false;
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return false;
  return !(env.OTEL_TRACES_EXPORTER ?? "").split(",").some((e) => e.trim() === "none");
}

/** The worker's settings: handler slots, retries, and the sync's pacing and reconciliation tiers. */
function workerConfig(e: z.output<typeof configSchema>) {
  return {
    concurrency: e.WORKER_CONCURRENCY,
    /** The most of the stream's handler slots one account (company) holds at once; `concurrency`: no cap. */
    concurrencyPerAccount: Math.min(e.WORKER_CONCURRENCY, e.WORKER_CONCURRENCY_PER_ACCOUNT ?? e.WORKER_CONCURRENCY),
    attempts: e.JOB_ATTEMPTS,
    /** First retry delay; doubles each attempt, with jitter. */
    backoffMs: e.JOB_BACKOFF_MS,
    /** A job whose worker died is run again once its lock (this long) expires. */
    lockMs: e.JOB_LOCK_MS,
    /** How many times a job may be found stalled (its worker died) before it fails. */
    maxStalls: e.JOB_MAX_STALLS,
    /** How long one attempt's handlers may run before it counts as a retryable failure; 0: no deadline. */
    handlerTimeoutMs: e.HANDLER_TIMEOUT_MS,
    /** Stream entry bytes a worker holds in flight at most (at least one entry always runs). */
    maxInflightBytes: e.WORKER_MAX_INFLIGHT_BYTES,
    /** How long a refresh waits so that a burst of events shares one list sweep. */
    syncDebounceMs: e.SYNC_DEBOUNCE_MS,
    /** How long an id the upstream does not list yet stays pending (with backoff) before it is reported. */
    syncUnlistedGiveUpMs: e.SYNC_UNLISTED_GIVE_UP_SECONDS * 1000,
    /** Pages one refresh read may walk when the list order cannot stop it earlier. */
    syncRefreshMaxPages: e.SYNC_REFRESH_MAX_PAGES,
    /** Share of the rate refreshes fill before they wait for room (1: no pacing). */
    syncRefreshPaceShare: e.SYNC_REFRESH_PACE_SHARE,
    /** The longest a refresh waits for room in the budget. */
    syncRefreshPaceMaxWaitMs: e.SYNC_REFRESH_PACE_MAX_WAIT_MS,
    /** The bookings list's upper date bound parameter (the spec does not show its name). */
    syncBookingsUpperBoundParam: e.SYNC_BOOKINGS_UPPER_BOUND_PARAM,
    /** How often a full pass starts (after the previous one started); 0 turns all reconciliation off. */
    reconcileIntervalMs: e.RECONCILE_INTERVAL_SECONDS * 1000,
    /** Whether a first import's writes produce change events (source `backfill`); false: none, as `backfill --no-changes`. */
    syncImportChangeEvents: e.SYNC_IMPORT_CHANGE_EVENTS,
    /** How often the active tier re-reads what can still change; 0 turns the active tier off. */
    reconcileActiveIntervalMs: e.RECONCILE_ACTIVE_INTERVAL_SECONDS * 1000,
    /** Pages one full-tier slice (one job) reads at most before it saves and ends. */
    reconcileFullSlicePages: e.RECONCILE_FULL_SLICE_PAGES,
    /** How often a worker marks itself alive, looks for a gap, and restores lost schedulers and the stream's group. */
    syncWatchIntervalMs: e.SYNC_WATCH_INTERVAL_SECONDS * 1000,
    /**
     * How often the change relay looks for change events left in the outbox (by other processes
     * or a crash); it is also poked right after every write that recorded changes. 0: this
     * process never relays (another worker must).
     */
    changeRelayIntervalMs: e.CHANGE_RELAY_INTERVAL_MS,
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
  // Slack ignores the signature; a Standard Webhooks receiver cannot check one that is not there.
  if (input.ALERT_WEBHOOK_URL && (input.ALERT_FORMAT ?? "standard") === "standard" && !input.ALERT_SIGNING_SECRET)
    problems.push("ALERT_SIGNING_SECRET is required when ALERT_WEBHOOK_URL is set and ALERT_FORMAT is standard");
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
function limitProblems(e: z.output<typeof configSchema>): string[] {
  const problems: string[] = [];
  // Node refuses a header timeout above the request timeout.
  if (e.HTTP_HEADERS_TIMEOUT_MS > e.HTTP_REQUEST_TIMEOUT_MS)
    problems.push("HTTP_HEADERS_TIMEOUT_MS must be at most HTTP_REQUEST_TIMEOUT_MS");
  if (e.HTTP_BODY_TIMEOUT_MS !== undefined && e.HTTP_BODY_TIMEOUT_MS > e.HTTP_REQUEST_TIMEOUT_MS)
    problems.push(
      "HTTP_BODY_TIMEOUT_MS must be at most HTTP_REQUEST_TIMEOUT_MS, or Node's 408 comes first and the body's bytes stay held until then",
    );
  for (const [i, secret] of (e.SIGNING_SECRET ?? []).entries()) {
    const problem = schemeSecretProblem(e.SIGNATURE_SCHEME, secret);
    if (problem) problems.push(`SIGNING_SECRET's secret ${i + 1}: ${problem} (SIGNATURE_SCHEME is ${e.SIGNATURE_SCHEME})`);
  }
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
    config.alerts.signingSecret,
    // A webhook URL may be its own credential (Slack's): only its host is ever logged.
    config.alerts.webhookUrl,
    config.secretsKey?.toString("hex"),
    config.secretsKey?.toString("base64"),
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

/**
 * The password of a `postgres://` URL exactly as node-postgres reads it (pg-connection-string
 * 2.x `parse`): when the URL holds a `%` that does not start a two-hex-digit escape (or a space),
 * pg re-encodes the whole URL with encodeURI, so such a `%` is a literal `%`, then
 * percent-decodes the password. Throws URIError when even that is not valid percent-encoding
 * (an escape of bytes that are not UTF-8, such as `%ff`), as pg itself would.
 */
export function postgresUrlPassword(url: string): string {
  const normalized = / |%[^a-f0-9]|%[a-f0-9][^a-f0-9]/i.test(url) ? encodeURI(url).replace(/%25(\d\d)/g, "%$1") : url;
  return decodeURIComponent(new URL(normalized, "postgres://base").password);
}

/** The user name and password of a URL percent-decoded strictly, as ioredis does; throws URIError where ioredis would. */
export function decodedUrlCredentials(url: string): { username: string; password: string } {
  const { username, password } = new URL(url);
  return { username: decodeURIComponent(username), password: decodeURIComponent(password) };
}

/** Whether `fn` throws a URIError for this value (a `%` that is not percent-encoding). */
export function failsToDecode(fn: () => unknown): boolean {
  try {
    fn();
    return false;
  } catch (err) {
    if (err instanceof URIError) return true;
    throw err;
  }
}

/**
 * The secret a sender signs with, given SIGNING_SECRET's comma-separated list: the first one, since
 * a rotation lists the new secret first (`SIGNING_SECRET=new,old`). The service accepts every
 * secret of the list; a sender (the dev sandbox, `trigger`) must sign with one of them, never
 * with the list itself. Undefined when the list is absent or starts with an empty entry.
 */
export function newestSigningSecret(list: string | undefined): string | undefined {
  const first = list?.split(",")[0]?.trim();
  // An empty first entry means "no secret", as an absent list does.
  return first === "" ? undefined : first;
}
