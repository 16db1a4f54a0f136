import type { Queue } from "bullmq";
import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import { type EventJobData, createEventsQueue, createSyncQueue } from "../queue/events-queue.js";
import type { RedisClient } from "../redis/redis.js";
import type { WorkerRole } from "../worker/worker-role.js";

export interface QueueHandles {
  eventsQueue: Queue<EventJobData>;
  syncQueue: Queue;
  /** The handles opened here (a process without a worker): the service closes them at its stop. */
  own: readonly Queue[];
}

/**
 * Both queues in every role (the dashboard, the depth gauges and the operator actions use them):
 * the worker's own where this process runs one, else handles of their own.
 */
export function queueHandles(deps: {
  config: Config;
  logger: Logger;
  connection: RedisClient;
  worker: WorkerRole | undefined;
}): QueueHandles {
  const { worker } = deps;
  if (worker) return { eventsQueue: worker.eventsQueue, syncQueue: worker.syncQueue, own: [] };
  const options = { connection: deps.connection, config: deps.config, logger: deps.logger };
  const eventsQueue = createEventsQueue(options);
  const syncQueue = createSyncQueue(options);
  return { eventsQueue, syncQueue, own: [eventsQueue, syncQueue] };
}
