import type { Storage } from "../mirror/storage.js";
import { NotReadyError } from "../http/errors.js";
import type { StreamSink } from "../queue/stream-sink.js";
import { withTimeout } from "../queue/with-timeout.js";
import type { RedisClient } from "../redis/redis.js";
import type { WorkerRole } from "../worker/worker-role.js";

/** How long /readyz waits for the database server's `select 1` (under READY_TIMEOUT_MS). */
const DATABASE_PROBE_MS = 1000;

/**
 * What /readyz checks. The edge depends on Redis only; every role that runs a worker also needs
 * the database, to record what it handles.
 */
export function serviceReadiness(deps: {
  sink: StreamSink | undefined;
  worker: WorkerRole | undefined;
  connection: RedisClient;
  storage: Storage;
}): () => Promise<void> {
  const { sink, worker, connection, storage } = deps;
  const redisReady = async () => {
    if (sink) return sink.ping();
    // The worker connection queues commands while Redis is away and never gives up on them: ask
    // it only when connected, so a probe never adds to that queue (/readyz also bounds the wait).
    if (connection.status !== "ready") throw new Error(`Redis connection is ${connection.status}`);
    await connection.ping();
  };
  if (!worker) return redisReady;
  const databaseReady = async () => {
    if (worker.recordingFails())
      throw new NotReadyError("the event log cannot record: events wait in the queue and are handled once the database is back");
    // The embedded store is in-process: its one connection may be busy (a long operator query), which
    // is not down; what it cannot write shows in the recording above.
    if (storage.database.driver === "embedded") return;
    await withTimeout(storage.ping(), DATABASE_PROBE_MS, "database probe").catch(() => {
      throw new NotReadyError("the database does not answer: events wait in the queue and are handled once it is back");
    });
  };
  return () => Promise.all([redisReady(), databaseReady()]).then(() => undefined);
}
