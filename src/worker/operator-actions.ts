import { createHash, randomUUID } from "node:crypto";
import type { JobsOptions, Queue } from "bullmq";
import type { Logger } from "pino";
import type { EventLog } from "../mirror/event-log.js";
import { isCalendarDay } from "../mirror/iso-instant.js";
import type { StepStore } from "../mirror/step-store.js";
import type { EventJobData } from "../queue/event-job.js";
import type { RedisClient } from "../redis/connection.js";
import { redisKeys } from "../redis/keys.js";
import { bulkReplayProgress, BULK_REPLAY_TTL_SECONDS, type BulkReplayProgress } from "./bulk-replay-progress.js";
import { OperatorActionError } from "./operator-action-error.js";
import { replayEvents, replayJob, replayQueryFromFilter } from "./replay-events.js";
import { settleFailedJobs } from "./settle-failed-jobs.js";
import { RECONCILE_JOBS } from "./sync/reconcile-jobs.js";
import { ACTIVE_PASS_LEASE } from "./sync/refresh-lease.js";
import type { RefreshNote, RefreshScheduler } from "./sync/refresh-scheduler.js";
import { SYNCED_KINDS, type SyncedKind } from "./sync/synced-kinds.js";

/**
 * The sync-queue job each operator request adds. Both are the reconciliation sweep today (it
 * covers every kind); a backfill's `kinds` and `since` travel in the job's data for a processor
 * that honours them.
 */
/** "Reconcile now" runs an active pass (what can still change); a backfill reads everything, resumably. */
export const OPERATOR_SYNC_JOBS = { reconcile: RECONCILE_JOBS.active, backfill: RECONCILE_JOBS.backfill } as const;
export type OperatorSyncRequest = keyof typeof OPERATOR_SYNC_JOBS;

/** How long an Idempotency-Key's answer is kept (as Stripe does: a day). */
const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

export interface ReplayEventResult {
  event: string;
  replay: { id: string; handlers: string[] };
}

export interface OperatorActionsDeps {
  eventLog: Pick<EventLog, "get" | "query">;
  eventsQueue: Queue<EventJobData>;
  syncQueue: Queue;
  /** Options of the sync jobs it adds (retries, retention): as the worker's sync queue has them. */
  syncJobOptions: JobsOptions;
  redis: RedisClient;
  prefix: string;
  /** The handler keys the workers run for a type; absent in a process without the registry (the log's keys then). */
  handlerKeys?: (type: string) => string[];
  /** For `fresh` replays: the durable steps to forget. */
  steps?: Pick<StepStore, "forget">;
  /** False when no upstream API is configured: reconcile and backfill have nothing to read. */
  syncAvailable: boolean;
  /** Where a record's refresh is asked for: the scheduler the built-in handlers note events' ids in. */
  refresh?: Pick<RefreshScheduler, "request">;
  logger: Logger;
}

const digest = (...parts: string[]) => createHash("sha256").update(parts.join("\u0000")).digest("hex").slice(0, 40);

/**
 * What an operator can do to the running system, in one place for the HTTP API and the CLI:
 * replay one event or every event matching a filter, follow a bulk replay, ask for a
 * reconciliation or a backfill. Each is idempotent (see the methods) and settles the failed jobs
 * of the events it replays.
 */
export function createOperatorActions(deps: OperatorActionsDeps) {
  const { eventLog, eventsQueue } = deps;
  const progress = bulkReplayProgress(deps.redis, deps.prefix);
  const settle = (ids: readonly string[]) => settleFailedJobs(eventsQueue, ids);

  return {
    /**
     * Replays one logged event (all its handlers, or one). Requested again while the first is
     * still queued, or with the same Idempotency-Key within a day, it answers the same replay id
     * and queues nothing more.
     */
    async replayEvent(id: string, options: { handler?: string; idempotencyKey?: string } = {}): Promise<ReplayEventResult> {
      const event = await eventLog.get(id);
      if (!event) throw new OperatorActionError("event_not_found", `no event ${id} in the event log`);
      const known = deps.handlerKeys?.(event.type) ?? Object.keys(event.handlers);
      const { handler, idempotencyKey } = options;
      if (handler !== undefined && !known.includes(handler))
        throw new OperatorActionError(
          "unknown_handler",
          `no handler ${handler} for ${event.type}; handlers: ${known.join(", ") || "none"}`,
        );
      await settle([id]);
      const job = replayJob(event, { handler });
      const deduplication = idempotencyKey
        ? { id: `idem-${digest(idempotencyKey, id, handler ?? "*")}`, ttl: IDEMPOTENCY_TTL_MS }
        : { id: `replay-${digest(id, handler ?? "*")}` };
      const added = await eventsQueue.add(job.name, job.data, { ...job.opts, deduplication });
      return { event: id, replay: { id: added.id ?? job.opts.jobId, handlers: handler ? [handler] : known } };
    },

    /**
     * Replays every logged event matching `filter` (GET /events' filters; `handler`: the events on
     * which it failed, running only it). A dry run only counts. Otherwise the count is answered at
     * once and the events are queued in the background, with progress under the returned id.
     */
    async replayMatching(
      filter: Record<string, string | undefined>,
      options: { dryRun?: boolean; fresh?: boolean; idempotencyKey?: string } = {},
    ): Promise<{ id?: string; count: number }> {
      const query = replayQueryFromFilter(filter);
      const count = await replayEvents({ eventLog, queue: undefined }, { query, dryRun: true });
      if (options.dryRun) return { count };
      const id = `bulk-${randomUUID()}`;
      if (options.idempotencyKey) {
        const key = redisKeys(deps.prefix).operator.idempotency(digest("bulk", options.idempotencyKey));
        const first = await deps.redis.set(key, id, "EX", BULK_REPLAY_TTL_SECONDS, "NX");
        if (first !== "OK") {
          const earlier = (await deps.redis.get(key)) ?? id;
          return { id: earlier, count: (await progress.read(earlier))?.total ?? count };
        }
      }
      await progress.start(id, count);
      void (async () => {
        const queued = await replayEvents(
          { eventLog, queue: eventsQueue },
          { query, handler: filter.handler, bulk: id, settle, ...(options.fresh && deps.steps ? { fresh: deps.steps } : {}) },
        );
        await progress.queued(id, queued);
        deps.logger.info({ bulk: id, queued }, "bulk replay queued");
      })().catch((err: unknown) =>
        deps.logger.error({ bulk: id, err: (err as Error).message }, "bulk replay stopped before queuing every event"),
      );
      return { id, count };
    },

    async bulkProgress(id: string): Promise<BulkReplayProgress> {
      const found = /^bulk-[0-9a-f-]{36}$/.test(id) ? await progress.read(id) : undefined;
      if (!found) throw new OperatorActionError("replay_not_found", `no bulk replay ${id}`);
      return found;
    },

    /**
     * Asks for a narrow read of one record now: notes its id as pending and schedules the kind's
     * refresh job, exactly as an event naming it would (the hints, from the mirror's copy, steer
     * the read). Menus are read whole per restaurant; reviews have no endpoint to read.
     */
    async requestRefresh(kind: string, restaurantId: string, id: string, note: RefreshNote = {}): Promise<void> {
      if (!deps.syncAvailable || !deps.refresh)
        throw new OperatorActionError("sync_unavailable", "no upstream API is configured (API_BASE_URL, API_KEY)");
      if (!SYNCED_KINDS.includes(kind as SyncedKind))
        throw new OperatorActionError(
          "invalid_request",
          `${kind} are stored as delivered: only ${SYNCED_KINDS.join(", ")} are read from the API`,
        );
      await deps.refresh.request(kind as SyncedKind, restaurantId, kind === "menu-items" ? undefined : id, note);
    },

    /**
     * Asks the workers for a reconciliation or a backfill: one job on the sync queue. Asked again
     * while that job waits or runs, it answers the same job. A reconciliation asked for while an
     * active pass runs waits for it and runs right after it (`runs` says which).
     */
    async requestSync(
      request: OperatorSyncRequest,
      options: { kinds?: string[]; since?: string; restart?: boolean } = {},
    ): Promise<{ job: string; runs?: "now" | "after the running pass" }> {
      if (!deps.syncAvailable) throw new OperatorActionError("sync_unavailable", "no upstream API is configured (API_BASE_URL, API_KEY)");
      const data: Record<string, unknown> = { requestedBy: "operator", request };
      if (options.kinds !== undefined) {
        const wrong = options.kinds.filter((k) => !SYNCED_KINDS.includes(k as SyncedKind));
        if (wrong.length > 0 || options.kinds.length === 0)
          throw new OperatorActionError(
            "invalid_request",
            `kinds takes ${SYNCED_KINDS.join(", ")}; not ${wrong.join(", ") || "an empty list"}`,
          );
        data.kinds = options.kinds;
      }
      if (options.since !== undefined) {
        if (!isCalendarDay(options.since))
          throw new OperatorActionError("invalid_request", `since takes a date YYYY-MM-DD, not "${options.since}"`);
        data.since = options.since;
      }
      if (options.restart === true) data.restart = true;
      const job = await deps.syncQueue.add(OPERATOR_SYNC_JOBS[request], data, {
        ...deps.syncJobOptions,
        deduplication: { id: `operator-${request}` },
      });
      if (request !== "reconcile") return { job: job.id ?? "" };
      const running = (await deps.redis.exists(redisKeys(deps.prefix).refreshLease(ACTIVE_PASS_LEASE))) === 1;
      return { job: job.id ?? "", runs: running ? "after the running pass" : "now" };
    },
  };
}

export type OperatorActions = ReturnType<typeof createOperatorActions>;
