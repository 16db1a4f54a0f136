import type { Queue, Worker } from "bullmq";
import type { Logger } from "pino";
import type { EventLog } from "../mirror/event-log.js";
import type { MirrorStore } from "../mirror/mirror-store.js";
import type { Config } from "../config/config.js";
import type { HandlerRegistry } from "../events/registry.js";
import type { Metrics } from "../metrics/metrics.js";
import { createAttemptRunner } from "../queue/attempt-runner.js";
import { type EventJobData, createEventWorker, EVENTS_QUEUE } from "../queue/events-queue.js";
import { createStreamConsumer, type StreamConsumer } from "../queue/stream-consumer.js";
import type { RedisClient } from "../redis/redis.js";
import { isPermanentUpstreamError } from "../upstream/errors.js";
import { createFinishedEvents, type FinishedEvents } from "./finished-events.js";
import type { SharedHandlerContext } from "./handler-context.js";
import { jobLabel } from "./job-observers.js";
import { watchRecording, type RecordingHealth } from "./recording-health.js";

export interface EventDelivery {
  /** Handles events straight from the edge's ingest stream (their first attempt). */
  streamConsumer: StreamConsumer;
  /** Handles the events queue's jobs: retries, replays, change events, entries a dead consumer left. */
  eventWorker: Worker<EventJobData>;
  /** Every attempt either of them finished. */
  finished: FinishedEvents;
  /** Whether the event log takes this process's attempts. */
  recording: RecordingHealth;
}

/**
 * The delivery path of the worker: one attempt runner (deadline, dispatch, record, verdict) that
 * both sources share, the stream consumer for first attempts, and the events queue's worker for
 * the rest; both report each finished attempt to one feed and to the same metrics.
 */
export function createEventDelivery(deps: {
  config: Config;
  logger: Logger;
  connection: RedisClient;
  metrics: Metrics;
  mirror: MirrorStore;
  eventLog: EventLog;
  eventsQueue: Queue<EventJobData>;
  registry: HandlerRegistry<SharedHandlerContext>;
}): EventDelivery {
  const { config, logger, connection, metrics, mirror } = deps;
  const { concurrency, lockMs, maxStalls } = config.worker;
  const prefix = config.queuePrefix;
  const recording = watchRecording(deps.eventLog);
  const runner = createAttemptRunner<SharedHandlerContext>({
    registry: deps.registry,
    handlerTimeoutMs: config.worker.handlerTimeoutMs,
    logger,
    eventLog: recording.eventLog,
    makeContext: (_event, attempt, log, signal) => ({ mirror, logger: log, attempt, signal }),
    isPermanent: isPermanentUpstreamError,
  });
  const eventWorker = createEventWorker({
    connection,
    prefix,
    runner,
    concurrency,
    lockMs,
    maxStalls,
    logger,
    heldRetryMs: config.worker.backoffMs,
  });
  const finished = createFinishedEvents(eventWorker);
  const streamConsumer = createStreamConsumer({
    connection,
    prefix,
    queue: deps.eventsQueue,
    runner,
    concurrency,
    maxInflightBytes: config.worker.maxInflightBytes,
    // The edge's body limit plus the envelope: a read never asks for more than the budget holds.
    largestEntryBytes: config.maxBodyBytes + 4096,
    attempts: config.worker.attempts,
    backoffMs: config.worker.backoffMs,
    dedupWindowSeconds: config.dedupWindowSeconds,
    batchSize: config.ingest.batchSize,
    claimIdleMs: config.ingest.claimIdleMs,
    logger,
    // Counted as the events queue's jobs are, so one set of metrics covers both paths.
    onFinished: ({ id, type, outcome, seconds }) => {
      const name = jobLabel(type);
      metrics.jobs.inc({ queue: EVENTS_QUEUE, name, outcome });
      if (outcome !== "retried") metrics.jobSeconds.observe({ queue: EVENTS_QUEUE, name }, seconds);
      metrics.eventsConsumed.inc();
      finished.emit({ id, type, outcome, via: "stream" });
    },
    onClaimed: (n) => metrics.eventsClaimed.inc(n),
  });
  return { streamConsumer, eventWorker, finished, recording };
}
