import type { Queue } from "bullmq";
import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import type { Metrics } from "../metrics/metrics.js";
import type { ChangeOutbox } from "../mirror/change-outbox.js";
import type { MirrorStore } from "../mirror/mirror-store.js";
import type { EventJobData } from "../queue/events-queue.js";
import { activeTraceparent, type Tracing } from "../tracing/tracing.js";
import { createChangeRelay, type ChangeRelay } from "./change-relay.js";
import { createMirrorWriter, type MirrorWriter } from "../mirror/change-outbox.js";

export interface ChangeFeed {
  /** How sync code writes the mirror: each change it makes is recorded in the outbox with the write. */
  writer: MirrorWriter;
  /** Moves the recorded changes from the outbox into the events queue, where they run like any event. */
  relay: ChangeRelay;
}

/** Change events: recorded with each mirror write, counted, and relayed into the events queue. */
export function createChangeFeed(deps: {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  mirror: MirrorStore;
  outbox: ChangeOutbox;
  eventsQueue: Queue<EventJobData>;
  tracing?: Tracing;
}): ChangeFeed {
  const { config, logger, metrics, tracing } = deps;
  const relay = createChangeRelay({
    outbox: deps.outbox,
    queue: deps.eventsQueue,
    dedupWindowMs: config.dedupWindowSeconds * 1000,
    intervalMs: config.worker.changeRelayIntervalMs,
    logger,
    ...(tracing ? { tracer: tracing.tracer } : {}),
  });
  const writer = createMirrorWriter(deps.mirror, {
    // With tracing on, a change event's handlers continue the trace of the write that made it.
    ...(tracing ? { traceparent: activeTraceparent } : {}),
    onRecorded(changes) {
      for (const { data } of changes) {
        metrics.mirrorChanges.inc({ kind: data.kind, source: data.source });
        if (data.source === "reconcile") metrics.missedWebhooks.inc({ kind: data.kind });
      }
      // Debug: a busy sync records changes on every write; the metrics above count them.
      logger.debug({ changes: changes.length }, "mirror changes recorded");
      relay.poke();
    },
  });
  return { writer, relay };
}
