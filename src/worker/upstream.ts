import { ApiNotConfiguredError } from "./errors.js";
import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import { collectRateBudget, type Metrics } from "../metrics/metrics.js";
import type { RedisClient } from "../redis/redis.js";
import type { Tracing } from "../tracing/tracing.js";
import { apiKeyId, createApiClient, type ApiClient, type ApiClientOptions } from "../upstream/client.js";
import { createRateLimiter, type RateLimiter, type RateLimiterOptions } from "../upstream/rate-limiter.js";

export type Upstream = ReturnType<typeof upstreamFromConfig>;

/**
 * The upstream API client and its shared rate limiter as the config describes them, every
 * response and budget slot counted in the metrics; undefined when no API is configured (nothing
 * is synced into the mirror then, which the log says once).
 */
export function meteredUpstream(deps: {
  config: Config;
  connection: RedisClient;
  logger: Logger;
  metrics: Metrics;
  tracing?: Tracing;
  /** Aborts every call in flight and after (the worker's shutdown deadline). */
  signal?: AbortSignal;
}): Upstream | undefined {
  const { config, logger, metrics, tracing } = deps;
  if (!config.api) {
    logger.warn("API_BASE_URL/API_KEY not set: orders, bookings and menus are not synced into the mirror");
    return undefined;
  }
  const upstream = upstreamFromConfig(config.api, deps.connection, config.queuePrefix, {
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
  });
  collectRateBudget(metrics, config.api.rate, () => upstream.limiter.state());
  return upstream;
}

/** The API client and its shared limiter, as the config describes them (worker and backfill alike). */
export function upstreamFromConfig(
  api: NonNullable<Config["api"]>,
  redis: RedisClient,
  prefix: string,
  extra: Pick<ApiClientOptions, "onResponse" | "logger" | "tracer" | "bookingsUpperBoundParam" | "signal"> &
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
