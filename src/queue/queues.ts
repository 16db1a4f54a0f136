import { Queue, type QueueOptions } from "bullmq";
import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import { type RedisClient, warnUnlessOutage } from "../redis/redis.js";
import type { EventJobData } from "./event-job.js";
import { configuredEventJobOptions, configuredJobOptions } from "./job-options.js";
import { EVENTS_QUEUE, SYNC_QUEUE } from "./names.js";

/** What a handle on one of the service's queues is built from, in every process that opens one. */
export interface QueueHandleOptions {
  connection: RedisClient;
  /** QUEUE_PREFIX, and the retries and retention every job added through the handle gets. */
  config: Pick<Config, "queuePrefix" | "worker" | "retention">;
  /**
   * Where the handle's errors are reported (warnUnlessOutage: Redis being away is
   * logRedisOutages' to report). Without one they are ignored: a one-off command's calls fail on
   * their own, and an "error" event nobody listens to would throw.
   */
  logger?: Logger;
  /** bullmq-otel: a job carries the trace of the code that added it. */
  telemetry?: QueueOptions["telemetry"];
}

/**
 * Every handle on a queue of the service is built here: the prefix, the job defaults, BullMQ's own
 * event stream kept short, and an "error" listener (an unheard one would throw).
 */
export function openQueue<Data>(
  name: string,
  options: {
    connection: RedisClient;
    prefix: string;
    defaultJobOptions: QueueOptions["defaultJobOptions"];
    onError: (err: Error) => void;
    telemetry?: QueueOptions["telemetry"] | undefined;
  },
): Queue<Data> {
  const { connection, prefix, defaultJobOptions, telemetry } = options;
  const queue = new Queue<Data>(name, {
    connection,
    prefix,
    defaultJobOptions,
    // BullMQ's own event stream of the queue (what QueueEvents reads): kept short.
    streams: { events: { maxLen: 1000 } },
    ...(telemetry ? { telemetry } : {}),
  });
  queue.on("error", options.onError);
  return queue;
}

function queueHandle<Data>(name: string, options: QueueHandleOptions, defaultJobOptions: QueueOptions["defaultJobOptions"]): Queue<Data> {
  const { connection, config, logger, telemetry } = options;
  return openQueue<Data>(name, {
    connection,
    prefix: config.queuePrefix,
    defaultJobOptions,
    onError: logger ? warnUnlessOutage(logger, `${name} queue error`) : () => undefined,
    telemetry,
  });
}

/** The events queue: retries, dead letters, replays, change events and stream entries moved on. */
export function createEventsQueue(options: QueueHandleOptions): Queue<EventJobData> {
  return queueHandle<EventJobData>(EVENTS_QUEUE, options, configuredEventJobOptions(options.config));
}

/** The sync queue: refresh, reconcile and operator jobs, apart so a 429 pauses only it. */
export function createSyncQueue<Data = Record<string, unknown>>(options: QueueHandleOptions): Queue<Data> {
  return queueHandle<Data>(SYNC_QUEUE, options, {
    ...configuredJobOptions(options.config),
    // A finished sync job leaves nothing worth keeping; its outcome is logged.
    removeOnComplete: true,
  });
}
