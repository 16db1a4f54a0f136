import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import type { Metrics } from "../metrics/metrics.js";
import type { Storage } from "../mirror/storage.js";
import { createStreamSink, type StreamSink } from "../queue/stream-sink.js";
import { activeTraceparent, type Tracing } from "../tracing/tracing.js";
import type { EventHandlers } from "../worker/handlers.js";
import type { SyncJobProcessors } from "../worker/sync-worker.js";
import { createWorkerRole, type WorkerRole } from "../worker/worker-role.js";
import type { RedisConnections } from "./redis-connections.js";

export interface ServiceRoles {
  /** Roles all and worker. */
  worker: WorkerRole | undefined;
  /** The edge's hot path (roles all and web): verified events go to the ingest stream. */
  sink: StreamSink | undefined;
}

/** The worker and the edge's sink, each where the role runs it. */
export function createServiceRoles(deps: {
  config: Config;
  logger: Logger;
  connections: RedisConnections;
  storage: Storage;
  metrics: Metrics;
  handlers: readonly EventHandlers[];
  tracing: Tracing | undefined;
  /** Sync-queue jobs the service runs beside the worker's own (the operator actions a CLI hands over). */
  moreSyncProcessors: SyncJobProcessors;
}): ServiceRoles {
  const { config, connections, storage, tracing } = deps;
  const worker =
    connections.worker &&
    createWorkerRole({
      config,
      logger: deps.logger,
      connection: connections.worker,
      mirror: storage.mirror,
      eventLog: storage.eventLog,
      changeOutbox: storage.changeOutbox,
      steps: storage.steps,
      checkpoints: storage.checkpoints,
      handlers: deps.handlers,
      metrics: deps.metrics,
      tracing,
      moreSyncProcessors: deps.moreSyncProcessors,
    });
  const sink =
    connections.web &&
    createStreamSink({
      connection: connections.web,
      prefix: config.queuePrefix,
      dedupWindowSeconds: config.dedupWindowSeconds,
      timeoutMs: config.enqueueTimeoutMs,
      maxBacklog: config.ingest.maxBacklog,
      ...(tracing ? { traceparent: activeTraceparent } : {}),
    });
  return { worker, sink };
}
