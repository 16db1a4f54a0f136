import type { Queue } from "bullmq";
import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import type { Storage } from "../mirror/storage.js";
import type { RedisClient } from "../redis/redis.js";
import { trackBulkReplays } from "../worker/bulk-replay-progress.js";
import { createOperatorActions, type OperatorActions } from "../worker/operator-actions.js";
import { createRefreshQueue, type RefreshJobData } from "../sync/refresh-queue.js";
import type { WorkerRole } from "../worker/worker-role.js";
import type { QueueHandles } from "./queue-handles.js";

/**
 * The operator's write API in this process (replays, bulk replays, refresh, reconcile, backfill):
 * one home for the HTTP API and the CLI's hand-over. A worker here counts the bulk replays' jobs.
 */
export function serviceOperatorActions(deps: {
  config: Config;
  logger: Logger;
  connection: RedisClient;
  storage: Storage;
  queues: QueueHandles;
  worker: WorkerRole | undefined;
}): OperatorActions {
  const { config, connection, worker } = deps;
  const prefix = config.queuePrefix;
  if (worker) trackBulkReplays(worker.eventWorker, connection, prefix);
  return createOperatorActions({
    eventLog: deps.storage.eventLog,
    eventsQueue: deps.queues.eventsQueue,
    syncQueue: deps.queues.syncQueue,
    redis: connection,
    prefix,
    ...(worker ? { handlerKeys: (type: string) => worker.handlerKeys(type) } : {}),
    steps: deps.storage.steps,
    confirmAbove: config.bulkReplayConfirmAbove,
    syncAvailable: config.api !== undefined,
    // "Refresh now" on a record page notes its id where the built-in handlers note events' ids.
    refresh: createRefreshQueue({
      redis: connection,
      queue: deps.queues.syncQueue as Queue<RefreshJobData>,
      prefix,
      debounceMs: config.worker.syncDebounceMs,
    }),
    logger: deps.logger,
  });
}
