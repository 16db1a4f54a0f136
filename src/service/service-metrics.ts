import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import {
  collectDatabaseHealth,
  collectIngestBacklog,
  collectMirrorLag,
  collectQueueDepths,
  collectStreamConsumer,
  type Metrics,
} from "../metrics/metrics.js";
import { createMinuteSampler } from "../metrics/minute-samples.js";
import type { Storage } from "../mirror/storage.js";
import { MIRROR_KINDS, type MirrorKind } from "../mirror/database.js";
import { readStreamBacklog } from "../queue/ingest-stream.js";
import { redisKeys } from "../redis/redis.js";
import type { WorkerRole } from "../worker/worker-role.js";
import type { QueueHandles } from "./queue-handles.js";
import type { RedisConnections } from "./redis-connections.js";

export type MinuteSampler = ReturnType<typeof createMinuteSampler>;

/**
 * What the service reports at scrape time (queue depths, the ingest backlog, mirror lag, the
 * database, the stream consumer, the role); returns the minute sampler a worker process runs for
 * the console's charts (each worker adds its minute to the shared samples).
 */
export function collectServiceMetrics(deps: {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  connections: RedisConnections;
  storage: Storage;
  queues: QueueHandles;
  worker: WorkerRole | undefined;
}): MinuteSampler | undefined {
  const { config, metrics, storage, worker } = deps;
  const { any, worker: workerConnection } = deps.connections;
  const prefix = config.queuePrefix;
  collectQueueDepths(metrics, [deps.queues.eventsQueue, deps.queues.syncQueue]);
  collectIngestBacklog(metrics, () => readStreamBacklog(any, prefix));
  collectMirrorLag(metrics, MIRROR_KINDS, (kind) => storage.mirror.lastWriteAt(kind as MirrorKind));
  collectDatabaseHealth(metrics, () => storage.ping());
  if (worker) collectStreamConsumer(metrics, worker.streamConsumer);
  metrics.role.set({ role: config.role }, 1);
  return (
    workerConnection && createMinuteSampler({ redis: workerConnection, key: redisKeys(prefix).minuteSamples, metrics, logger: deps.logger })
  );
}
