import { ApiNotConfiguredError } from "./errors.js";
import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import { collectRateBudget, type Metrics } from "../metrics/metrics.js";
import type { RedisClient } from "../redis/redis.js";
import type { Tracing } from "../tracing/tracing.js";
import { createApiClient, type ApiCallOutcome, type ApiClient, type ApiClientOptions } from "../upstream/client.js";
import { apiKeyId } from "../base/api-key.js";
import { DEFAULT_ACCOUNT } from "../config/defaults.js";
import { createRateLimiter, type RateLimiter, type RateLimiterOptions } from "../upstream/rate-limiter.js";
import { UpstreamError } from "../upstream/errors.js";
import type { KeyTrial } from "../mirror/accounts.js";

export type Upstream = ReturnType<typeof upstreamFromConfig>;

/** The upstreams of one worker process: the env company's, and a registered account's by its key. */
export type Upstreams = NonNullable<ReturnType<typeof meteredUpstreams>>;

/**
 * The upstream API clients and their shared rate limiters as the config describes them, every
 * response and budget slot counted in the metrics (summed over keys: a label per account would grow
 * with them); undefined when no API is configured (nothing is synced into the mirror then, which
 * the log says once).
 */
export function meteredUpstreams(deps: {
  config: Config;
  connection: RedisClient;
  logger: Logger;
  metrics: Metrics;
  tracing?: Tracing;
  /** Aborts every call in flight and after (the worker's shutdown deadline). */
  signal?: AbortSignal;
  /** Told each attempt's outcome of the calls made for an account (problems/upstream-facts.ts). */
  outcomesOf?: (account: string) => (outcome: ApiCallOutcome) => void;
}) {
  const { config, logger, metrics, tracing } = deps;
  const api = config.api;
  if (!api) {
    logger.warn("API_BASE_URL/API_KEY not set: orders, bookings and menus are not synced into the mirror");
    return undefined;
  }
  const extra: Parameters<typeof upstreamFromConfig>[3] = {
    logger,
    ...(tracing ? { tracer: tracing.tracer } : {}),
    bookingsUpperBoundParam: config.worker.syncBookingsUpperBoundParam,
    ...(deps.signal ? { signal: deps.signal } : {}),
    onResponse: ({ method, route, status, budget }) => {
      metrics.upstreamRequests.inc({ method, route, status: String(status) });
      if (status === 429) {
        metrics.upstreamRateLimited.inc();
        metrics.budgetRateLimited.inc({ class: budget });
      }
    },
    onSlot: ({ budget, waitedMs }) => {
      metrics.budgetSlots.inc({ class: budget });
      metrics.budgetWaitSeconds.observe({ class: budget }, waitedMs / 1000);
    },
  };
  // A key's client is shared by every account that holds the key: each is told of its calls.
  const accountsOfKey = new Map<string, Set<string>>();
  const withOutcomes = (apiKey: string, account: string): typeof extra => {
    const holders = new Set([account]);
    accountsOfKey.set(apiKey, holders);
    const outcomesOf = deps.outcomesOf;
    if (!outcomesOf) return extra;
    const reporters = new Map<string, (outcome: ApiCallOutcome) => void>();
    const of = (holder: string) => {
      let reporter = reporters.get(holder);
      if (!reporter) reporters.set(holder, (reporter = outcomesOf(holder)));
      return reporter;
    };
    return {
      ...extra,
      onOutcome: (outcome) => {
        for (const holder of holders) of(holder)(outcome);
      },
    };
  };
  const main = upstreamFromConfig(api, deps.connection, config.queuePrefix, withOutcomes(api.apiKey, DEFAULT_ACCOUNT));
  collectRateBudget(metrics, api.rate, () => main.limiter.state());
  const byKey = new Map<string, Upstream>([[api.apiKey, main]]);
  return {
    /** The env company's (`default`), its budget in the metrics. */
    main,
    /**
     * The client of another key (a registered account's), on that key's own shared budget: every
     * process with the key shares its 120 a minute (spec part 8). Built once per key.
     */
    forKey(apiKey: string, account: string): Upstream {
      let upstream = byKey.get(apiKey);
      if (!upstream)
        byKey.set(
          apiKey,
          (upstream = upstreamFromConfig({ ...api, apiKey }, deps.connection, config.queuePrefix, withOutcomes(apiKey, account))),
        );
      else accountsOfKey.get(apiKey)?.add(account);
      return upstream;
    },
  };
}

/** The API client and its shared limiter, as the config describes them (worker and backfill alike). */
export function upstreamFromConfig(
  api: NonNullable<Config["api"]>,
  redis: RedisClient,
  prefix: string,
  extra: Pick<ApiClientOptions, "onResponse" | "onOutcome" | "logger" | "tracer" | "bookingsUpperBoundParam" | "signal"> &
    Pick<RateLimiterOptions, "onSlot"> = {},
): { api: ApiClient; limiter: RateLimiter } {
  const limiter = createRateLimiter({
    redis,
    keyId: apiKeyId(api.apiKey),
    max: api.rate,
    windowMs: api.rateWindowMs,
    safetyMs: api.rateSafetyMs,
    prefix,
    ...(extra.onSlot ? { onSlot: extra.onSlot } : {}),
  });
  const { onSlot: _onSlot, ...clientExtra } = extra;
  return {
    limiter,
    api: createApiClient({
      baseUrl: api.baseUrl,
      apiKey: api.apiKey,
      timeoutMs: api.timeoutMs,
      maxPageBytes: api.maxPageBytes,
      limiter,
      ...clientExtra,
    }),
  };
}

/** The `ctx.api` of a service without an upstream: every call fails with ApiNotConfiguredError. */
export function apiNotConfigured(why?: string): ApiClient {
  const refuse = (method: string) => () => Promise.reject(new ApiNotConfiguredError(method, why));
  const refuseToIterate = (method: string) => () => ({
    [Symbol.asyncIterator]: () => ({ next: () => Promise.reject<IteratorResult<never>>(new ApiNotConfiguredError(method, why)) }),
  });
  return {
    listOrders: refuse("listOrders"),
    listBookings: refuse("listBookings"),
    listMenuItems: refuse("listMenuItems"),
    iterateOrders: refuseToIterate("iterateOrders"),
    iterateBookings: refuseToIterate("iterateBookings"),
    iterateMenuItems: refuseToIterate("iterateMenuItems"),
    updateOrderStatus: refuse("updateOrderStatus"),
    refundOrder: refuse("refundOrder"),
    createBooking: refuse("createBooking"),
  };
}

/**
 * A client that picks the client to call at each call: an account's key may be rotated, and the
 * registry read again, after a handler's context was made.
 */
export function apiAtCall(current: () => ApiClient): ApiClient {
  const call =
    <M extends keyof ApiClient>(method: M) =>
    (...args: Parameters<ApiClient[M]>) =>
      (current()[method] as (...a: Parameters<ApiClient[M]>) => ReturnType<ApiClient[M]>)(...args);
  return {
    listOrders: call("listOrders"),
    listBookings: call("listBookings"),
    listMenuItems: call("listMenuItems"),
    iterateOrders: call("iterateOrders"),
    iterateBookings: call("iterateBookings"),
    iterateMenuItems: call("iterateMenuItems"),
    updateOrderStatus: call("updateOrderStatus"),
    refundOrder: call("refundOrder"),
    createBooking: call("createBooking"),
  };
}

/**
 * Tries an API key with the smallest read there is (one order, `limit=1`), through `api` (the
 * client of that key, on its budget): what an account's add and rotation do before storing it.
 * 401 and 403 are a refusal; a network error, a timeout or a 5xx say the API could not be asked;
 * any other answer (a 429 included) means the API knows the key.
 */
export async function tryApiKey(api: Pick<ApiClient, "listOrders">): Promise<KeyTrial> {
  try {
    await api.listOrders({ limit: 1 });
    return { outcome: "accepted" };
  } catch (err) {
    if (!(err instanceof UpstreamError)) return { outcome: "unreachable", cause: (err as Error).message };
    if (err.status === 401 || err.status === 403) return { outcome: "refused", status: err.status };
    if (err.status === undefined || err.status >= 500) return { outcome: "unreachable", cause: err.message };
    return { outcome: "accepted" };
  }
}
