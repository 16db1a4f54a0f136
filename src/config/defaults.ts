import { DEFAULT_TOLERANCE_SECONDS } from "../base/standard-webhooks.js";

/**
 * Defaults shared by the config schema and the library factories (which can be used without a
 * config): one home for each, so a factory's fallback never drifts from the service's default.
 */
export const DEFAULTS = {
  /** The service's port (PORT): also where `trigger` posts and dev's first run listens. */
  port: 3000,
  queuePrefix: "svc",
  apiRate: 120,
  apiRateWindowMs: 60_000,
  apiRateSafetyMs: 1000,
  apiTimeoutMs: 10_000,
  /**
   * How long a stop drains the work in hand (requests, stream entries, jobs) before it aborts
   * upstream reads and closes anyway. The closes after it share 4 s and the process exits at most
   * 5 s past it (service.ts): 20 s + 5 s = 25 s, inside fly's kill_timeout of 30 s
   * (fly.toml) with 5 s to spare for the signal's way and a slow machine.
   */
  shutdownTimeoutMs: 20_000,
  /**
   * How far V8 lets the JS heap grow past what survived its last full collection before the next
   * (`--heap-growing-percent`). V8's own factor reaches 4×: at 1,000 accounts (75 MiB alive) the
   * heap held ~310 MiB, mostly garbage, and RSS passed 400 MB. At 2× it stays near 150 MiB for a
   * few more collections (bench/results/accounts.md).
   */
  heapGrowingPercent: 100,
  jobAttempts: 10,
  jobBackoffMs: 1000,
  jobLockMs: 30_000,
  jobMaxStalls: 5,
  /** Whole request, headers and body; the upstream wants an answer within 10 s. */
  httpRequestTimeoutMs: 10_000,
  /** Request headers, counted from the request's first byte (Node ≥ 18), not from idle time. */
  httpHeadersTimeoutMs: 5_000,
  /** Idle keep-alive sockets: above the 60 s idle timeout of fly's proxy and ALB. */
  httpKeepAliveTimeoutMs: 65_000,
  httpMaxConnections: 1024,
  /** Node's default is 16 KB; no legitimate request here comes near 8 KB of headers. */
  httpMaxHeaderBytes: 8 * 1024,
  /** One request body at most (MAX_BODY_BYTES): also what a stream entry's size is figured from when not given. */
  maxBodyBytes: 1024 * 1024,
  /** Standard Webhooks: a delivery's timestamp may be this far from now, either way (the scheme's own 5 minutes). */
  signatureToleranceSeconds: DEFAULT_TOLERANCE_SECONDS,
  /** Request bodies held in memory across all requests at once (bytes that arrived, never bytes declared). */
  maxBufferedBodyBytes: 32 * 1024 * 1024,
  /**
   * The most of that budget one source (an account's path, a remote address) may hold: a quarter,
   * so that three others always have room; one body of MAX_BODY_BYTES always fits.
   */
  bodyBudgetSourceShare: 0.25,
  /**
   * How long a body may take to arrive once its headers are in: half the request timeout, so a
   * slow body gives its bytes back well before Node's 408. 1 MiB in 5 s is 200 KB/s.
   */
  httpBodyTimeoutMs: 5_000,
  /** Operator reads (GET /events, /mirror): a server cancels them past this; the embedded store stops its scan. */
  operatorQueryTimeoutMs: 5000,
  /** A bulk replay of more events than this must echo the dry run's count (`"confirm"`). */
  bulkReplayConfirmAbove: 1000,
  /**
   * How long one attempt's handlers may run: generous (five BullMQ default lock periods, a whole
   * rate-limit window of waiting and then some), since it only has to catch a handler that hangs.
   */
  handlerTimeoutMs: 300_000,
  /**
   * Stream entries (event JSON) a worker holds in flight. 16 MiB: 16 events at the 1 MiB body
   * limit, each costing a few times its size once parsed and recorded, stays well inside a 512 MB
   * VM (see docs/reliability.md); small events are bounded by WORKER_CONCURRENCY long before this.
   */
  workerMaxInflightBytes: 16 * 1024 * 1024,
  /** An id the upstream does not list yet is retried with backoff this long, then reported. */
  syncUnlistedGiveUpSeconds: 600,
  /** Pages one refresh read walks at most when the list's order cannot tell it to stop. */
  syncRefreshMaxPages: 10,
  /** Refreshes wait for the budget once the window holds this share of the rate (sync/refresh-queue.ts RefreshPace). */
  syncRefreshPaceShare: 0.75,
  /** The longest a refresh waits for room in the budget: the freshness paid for fewer calls. */
  syncRefreshPaceMaxWaitMs: 4000,
  /** The spec does not name the bookings list's upper date bound; the sandbox calls it `to`. */
  syncBookingsUpperBoundParam: "to",
  /**
   * The most bytes one upstream answer (a list page) may have. 100 real orders are 100–200 KB;
   * 4 MiB leaves twenty times that for long notes and many line items, while a worker reading a
   * few pages at once stays far inside a 512 MB VM (a page costs a few times its size once parsed).
   */
  apiMaxPageBytes: 4 * 1024 * 1024,
} as const;

/**
 * The account (a restaurant company) whose rows, events and keys are meant when a caller names
 * none: every deployment's env-configured company, and where rows written before accounts
 * existed were moved (mirror/migrations.ts, 0017_accounts). The one home of that name.
 */
export const DEFAULT_ACCOUNT = "default";

/**
 * An account as jobs, job ids, change events and URLs carry it: nothing for `default` (so its
 * jobs, keys and requests are what they were before accounts), the id for a registered account.
 */
export const carriedAccount = (account: string | undefined): string | undefined =>
  account === undefined || account === DEFAULT_ACCOUNT ? undefined : account;

/** A job id or deduplication id of the account's: `default`'s as before accounts, another's with `@<account>`. */
export const ownId = (id: string, account: string | undefined): string => {
  const carried = carriedAccount(account);
  return carried === undefined ? id : `${id}@${carried}`;
};

/** The `account` field of a job's data (or a change event's): none for `default`'s. */
export const ownData = (account: string | undefined): { account?: string } => {
  const carried = carriedAccount(account);
  return carried === undefined ? {} : { account: carried };
};

/** The `?account=` of an operator API request: none for `default`. */
export const accountQuery = (account: string | undefined): string => {
  const carried = carriedAccount(account);
  return carried === undefined ? "" : `?account=${encodeURIComponent(carried)}`;
};
