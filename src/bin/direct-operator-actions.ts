import type { Queue } from "bullmq";
import type { Storage } from "../mirror/storage.js";
import type { Config } from "../config/config.js";
import { createLogger } from "../logging/logger.js";
import type { EventJobData } from "../queue/event-job.js";
import { createEventsQueue, createSyncQueue } from "../queue/queues.js";
import { createOperatorActions, type OperatorActions } from "../worker/operator-actions.js";
import { openCliRedis } from "./cli-redis.js";

/**
 * The operator actions on the stores themselves: Redis (bounded wait) and, when given, the
 * database the command opened (openEventStores). `close` releases all of it, `storage` too.
 */
export async function directOperatorActions(
  config: Config,
  storage: Storage | undefined,
): Promise<{ actions: OperatorActions; eventsQueue: Queue<EventJobData>; close(): Promise<void> }> {
  let connection;
  try {
    connection = await openCliRedis(config);
  } catch (err) {
    await storage?.close();
    throw err;
  }
  const eventsQueue = createEventsQueue({ connection, config });
  const syncQueue = createSyncQueue({ connection, config });
  const noEventLog = {
    get: () => Promise.reject(new Error("no event log opened")),
    query: () => Promise.reject(new Error("no event log opened")),
  };
  const actions = createOperatorActions({
    eventLog: storage?.eventLog ?? noEventLog,
    eventsQueue,
    syncQueue,
    redis: connection,
    prefix: config.queuePrefix,
    ...(storage ? { steps: storage.steps } : {}),
    syncAvailable: config.api !== undefined,
    // Nothing here logs in a one-off command (bulk replays run in the foreground through replayEvents).
    logger: createLogger({ level: "silent" }),
  });
  return {
    actions,
    eventsQueue,
    async close() {
      await Promise.all([eventsQueue.close(), syncQueue.close()]);
      await connection.quit().catch(() => connection.disconnect());
      await storage?.close();
    },
  };
}
