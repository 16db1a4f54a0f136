import type { Queue } from "bullmq";
import type { Config } from "../config/config.js";
import type { RedisClient } from "../redis/redis.js";
import { createRefreshLinks, type RefreshLinks, type Tracing } from "../tracing/tracing.js";
import { createActivePassLease, type ActivePassLease } from "../sync/active-pass-lease.js";
import { createRefreshScheduler, type RefreshScheduler } from "../sync/refresh-scheduler.js";
import type { RefreshJobData } from "../sync/refresh-runs.js";

export interface RefreshRequests {
  /** Notes ids to read and schedules each kind's debounced refresh job. */
  scheduler: RefreshScheduler;
  /** The scheduler as handlers use it: with tracing on, each request is also noted for the refresh's span links. */
  linked: RefreshScheduler;
  /** With tracing on: runs a refresh in a span linked from the events that asked for it. */
  links: RefreshLinks | undefined;
  /** One active pass at a time across every worker (one refresh per kind is the scheduler's). */
  activePassLease: ActivePassLease;
}

/** Where events and operators ask for records to be read again, and who may read them when. */
export function createRefreshRequests(deps: {
  config: Config;
  connection: RedisClient;
  syncQueue: Queue;
  tracing?: Tracing;
}): RefreshRequests {
  const { config, connection, tracing } = deps;
  const prefix = config.queuePrefix;
  const activePassLease = createActivePassLease({ redis: connection, prefix, ttlMs: config.worker.lockMs });
  const scheduler = createRefreshScheduler({
    redis: connection,
    queue: deps.syncQueue as Queue<RefreshJobData>,
    prefix,
    debounceMs: config.worker.syncDebounceMs,
  });
  // With tracing on, each event that asks for a refresh is linked from the refresh's span.
  const links = tracing
    ? createRefreshLinks({ redis: connection, prefix, tracer: tracing.tracer, ttlMs: Math.max(600_000, 10 * config.worker.syncDebounceMs) })
    : undefined;
  const linked: RefreshScheduler = links
    ? {
        ...scheduler,
        request: async (kind, restaurantId, id, note) => {
          await links.note(kind);
          await scheduler.request(kind, restaurantId, id, note);
        },
      }
    : scheduler;
  return { scheduler, linked, links, activePassLease };
}
