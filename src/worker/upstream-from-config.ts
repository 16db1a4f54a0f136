import type { RedisClient } from "../redis/redis.js";
import type { Config } from "../config/config.js";
import { apiKeyId, createApiClient, type ApiClient, type ApiClientOptions } from "../upstream/client.js";
import { createRateLimiter, type RateLimiter, type RateLimiterOptions } from "../upstream/rate-limiter.js";

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
