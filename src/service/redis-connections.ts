import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import { expectDefined } from "../expect-defined.js";
import { createRedisConnection, type ConnectionKind, type RedisClient, logRedisOutages } from "../redis/redis.js";

export interface RedisConnections {
  /** Roles all and worker: for BullMQ's workers and the stream consumer (never gives up on a command). */
  worker: RedisClient | undefined;
  /** Roles all and web: the edge's, which fails fast while Redis is away. */
  web: RedisClient | undefined;
  /** The worker's, else the edge's: for what every role does (queue handles, operator actions, probes). */
  any: RedisClient;
  /** Every connection opened, in the order opened. */
  all: readonly RedisClient[];
}

/** The connections the role needs, each with its outages logged as a few lines (logRedisOutages). */
export function openRedisConnections(config: Config, logger: Logger): RedisConnections {
  const all: RedisClient[] = [];
  const connect = (kind: ConnectionKind) => {
    const connection = createRedisConnection(config.redisUrl, kind, { cluster: config.redisCluster });
    logRedisOutages(connection, { logger, url: config.redisUrl, kind });
    all.push(connection);
    return connection;
  };
  const worker = config.role !== "web" ? connect("worker") : undefined;
  const web = config.role !== "worker" ? connect("web") : undefined;
  return { worker, web, any: expectDefined(worker ?? web, "every role opens a Redis connection"), all };
}

/** Resolves once `connection` is ready (at once when it is). */
export function untilReady(connection: RedisClient): Promise<void> {
  if (connection.status === "ready") return Promise.resolve();
  return new Promise((resolve) => connection.once("ready", () => resolve()));
}
