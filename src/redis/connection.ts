import { Cluster, Redis, type ClusterOptions, type RedisOptions } from "ioredis";

/** One Redis or a Redis Cluster: both run our commands and scripts, and BullMQ takes either. */
export type RedisClient = Redis | Cluster;

export type ConnectionKind = "web" | "worker";

export interface RedisConnectionOptions {
  /** `url` names one seed node of a Redis Cluster; the client discovers the rest. @defaultValue false */
  cluster?: boolean;
}

// Reconnect forever with capped backoff; never give up (a null here would end the client).
const reconnectDelay = (times: number) => Math.min(50 * 2 ** Math.min(times, 6), 2000);
const CONNECT_TIMEOUT_MS = 2000;

/**
 * Two kinds of connection, as BullMQ needs them (see shared/STACK-NOTES.md):
 * - "web" (the edge's enqueues): fails fast while Redis is away so the edge can answer 503 instead
 *   of hanging, and reconnects by itself forever so it recovers without a restart.
 * - "worker" (blocking fetches, the mirror, the limiter): `maxRetriesPerRequest: null` as BullMQ
 *   requires, no command timeout (it would break the blocking fetch loop).
 * With `cluster`, the same two behaviours on an ioredis Cluster: the offline queue and the
 * reconnect strategy are the cluster's, the per-request retries each node connection's.
 *
 * @example
 * const connection = createRedisConnection(config.redisUrl, "worker", { cluster: config.redisCluster });
 */
export function createRedisConnection(url: string, kind: ConnectionKind, options: RedisConnectionOptions = {}): RedisClient {
  const failFast = kind === "web";
  if (options.cluster) return new Cluster([seedOf(url)], clusterOptions(url, failFast));
  const common: RedisOptions = { connectTimeout: CONNECT_TIMEOUT_MS, retryStrategy: reconnectDelay };
  return new Redis(
    url,
    failFast
      ? { ...common, enableOfflineQueue: false, maxRetriesPerRequest: 1 }
      : { ...common, maxRetriesPerRequest: null, enableReadyCheck: true },
  );
}

function seedOf(url: string): { host: string; port: number } {
  const { hostname, port } = new URL(url);
  // URL keeps the brackets of an IPv6 host; the socket wants the bare address.
  return { host: hostname.replace(/^\[(.*)\]$/, "$1"), port: port ? Number(port) : 6379 };
}

function clusterOptions(url: string, failFast: boolean): ClusterOptions {
  const { username, password, protocol } = new URL(url);
  return {
    // Ready only once CLUSTER INFO says the cluster serves every slot.
    enableReadyCheck: true,
    // Web: a command while the cluster is unreachable fails at once (the edge answers 503).
    enableOfflineQueue: !failFast,
    // Called when no node answers: rediscover from the seed, forever.
    clusterRetryStrategy: reconnectDelay,
    // Passed to the connection to each node (credentials and TLS as the seed URL gives them).
    redisOptions: {
      connectTimeout: CONNECT_TIMEOUT_MS,
      maxRetriesPerRequest: failFast ? 1 : null,
      ...(username ? { username: decodeURIComponent(username) } : {}),
      ...(password ? { password: decodeURIComponent(password) } : {}),
      ...(protocol === "rediss:" ? { tls: {} } : {}),
    },
  };
}
