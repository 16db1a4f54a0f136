import { Redis, type RedisOptions } from "ioredis";

/**
 * Two kinds of connection, as BullMQ needs them (see shared/STACK-NOTES.md):
 * - "web" (the edge's enqueues): fails fast while Redis is away so the edge can answer 503 instead
 *   of hanging, and reconnects by itself forever so it recovers without a restart.
 * - "worker" (blocking fetches, the mirror, the limiter): `maxRetriesPerRequest: null` as BullMQ
 *   requires, no command timeout (it would break the blocking fetch loop).
 */
export function createRedisConnection(url: string, kind: "web" | "worker", extra: RedisOptions = {}): Redis {
  const common: RedisOptions = {
    connectTimeout: 2000,
    // Reconnect forever with capped backoff; never give up (a null here would end the client).
    retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 6), 2000),
    ...extra,
  };
  const options: RedisOptions =
    kind === "web"
      ? { ...common, enableOfflineQueue: false, maxRetriesPerRequest: 1 }
      : { ...common, maxRetriesPerRequest: null, enableReadyCheck: true };
  return new Redis(url, options);
}
