import { createHash, randomUUID } from "node:crypto";
import type { Queue } from "bullmq";
import type { Logger } from "pino";
import type { EventLog } from "../mirror/event-log.js";
import type { StepStore } from "../mirror/step-store.js";
import type { EventJobData } from "../queue/events-queue.js";
import { type RedisClient, redisKeys } from "../redis/redis.js";
import { earlierAnswer, refuseUnconfirmed, takeFilterSlot } from "./bulk-replay-guards.js";
import { bulkReplayProgress, BULK_REPLAY_TTL_SECONDS, type BulkReplayProgress } from "./bulk-replay-progress.js";
import { OperatorActionError } from "./operator-action-error.js";
import { bulkReplayJobId, replayEvents, replayQueryFromFilter } from "./replay-events.js";

export interface BulkReplayDeps {
  eventLog: Pick<EventLog, "get" | "query">;
  eventsQueue: Queue<EventJobData>;
  redis: RedisClient;
  prefix: string;
  steps?: Pick<StepStore, "forget">;
  /** BULK_REPLAY_CONFIRM_ABOVE: more events than this need `confirm` (the dry run's count). */
  confirmAbove: number;
  /** Takes the replayed events' failed jobs off the events queue (removeReplayedFailedJobs). */
  removeFailedJobs: (eventIds: readonly string[]) => Promise<unknown>;
  logger: Logger;
}

export interface BulkReplayRequest {
  /** GET /events' filters; `{}` means every event. */
  filter: Record<string, string | undefined>;
  dryRun?: boolean;
  fresh?: boolean;
  /** The count the caller expects (its dry run's): needed above `confirmAbove`, checked whenever given. */
  confirm?: number;
  idempotencyKey?: string;
}

const digest = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 40);

/** The filter in one spelling (sorted names, no absent values): identical filters digest alike. */
function canonicalFilter(filter: Record<string, string | undefined>): string {
  const present = Object.entries(filter).filter(([, v]) => v !== undefined);
  return JSON.stringify(present.sort(([a], [b]) => (a < b ? -1 : 1)));
}

/**
 * Bulk replays: start one (counted, capped, one at a time per filter, idempotent), and cancel one.
 * The events are queued in the background; workers count each job's end into its progress.
 */
export function bulkReplays(deps: BulkReplayDeps) {
  const progress = bulkReplayProgress(deps.redis, deps.prefix);
  const keys = redisKeys(deps.prefix).operator;

  async function read(id: string): Promise<BulkReplayProgress> {
    const found = /^bulk-[0-9a-f-]{36}$/.test(id) ? await progress.read(id) : undefined;
    if (!found) throw new OperatorActionError("replay_not_found", `no bulk replay ${id}`);
    return found;
  }

  /** Takes the queued jobs of a cancelled replay that no worker has started off the queue. */
  async function withdraw(id: string, queued: number): Promise<void> {
    let withdrawn = 0;
    for (let n = 0; n < queued; n++) {
      const jobId = bulkReplayJobId(id, n);
      const state = await deps.eventsQueue.getJobState(jobId);
      // remove() refuses a job a worker holds (its lock): that one runs to its end.
      if (["waiting", "delayed", "prioritized", "paused"].includes(state)) withdrawn += await deps.eventsQueue.remove(jobId);
    }
    await progress.withdrew(id, withdrawn);
    deps.logger.info({ bulk: id, withdrawn }, "bulk replay cancelled");
  }

  return {
    /**
     * A dry run answers the count. Otherwise: the same Idempotency-Key answers its replay again;
     * an identical filter whose replay still runs is refused (409 replay_running); a count above
     * the cap, or other than `confirm`, is refused (409 confirm_required); else the count and the
     * new replay's id are answered at once and the events queued in the background.
     */
    start: async (request: BulkReplayRequest): Promise<{ count: number; id?: string }> => {
      const query = replayQueryFromFilter(request.filter);
      const count = await replayEvents({ eventLog: deps.eventLog, queue: undefined }, { query, dryRun: true });
      if (request.dryRun) return { count };
      const filter = canonicalFilter(request.filter);
      const params = digest(`${filter} fresh=${request.fresh === true}`);
      const idemKey = request.idempotencyKey ? keys.idempotency(digest(`bulk\u0000${request.idempotencyKey}`)) : undefined;
      if (idemKey) {
        const earlier = await earlierAnswer(deps.redis, progress, idemKey, params);
        if (earlier) return earlier;
      }
      refuseUnconfirmed(count, request.confirm, deps.confirmAbove);
      const id = `bulk-${randomUUID()}`;
      // Started before it takes the filter's slot, so a second request never sees a holder without
      // progress (which reads as not running); dropped again when the request does not go ahead.
      await progress.start(id, count);
      try {
        await takeFilterSlot(deps.redis, progress, keys.bulkReplayByFilter(digest(filter)), id);
      } catch (err) {
        await progress.discard(id);
        throw err;
      }
      if (idemKey && (await deps.redis.set(idemKey, `${params} ${id}`, "EX", BULK_REPLAY_TTL_SECONDS, "NX")) !== "OK") {
        await progress.discard(id);
        const earlier = await earlierAnswer(deps.redis, progress, idemKey, params);
        if (earlier) return earlier;
      }
      void (async () => {
        const queued = await replayEvents(
          { eventLog: deps.eventLog, queue: deps.eventsQueue },
          {
            query,
            handler: request.filter.handler,
            bulk: id,
            removeFailedJobs: deps.removeFailedJobs,
            stop: () => progress.cancelled(id),
            ...(request.fresh && deps.steps ? { fresh: deps.steps } : {}),
          },
        );
        if (await progress.queued(id, queued)) await withdraw(id, queued);
        else deps.logger.info({ bulk: id, queued }, "bulk replay queued");
      })().catch((err: unknown) =>
        deps.logger.error({ bulk: id, err: (err as Error).message }, "bulk replay stopped before queuing every event"),
      );
      return { count, id };
    },

    /**
     * Stops a bulk replay between events: nothing more is queued, and its queued jobs no worker
     * has started are taken off the queue (the ones running end as they would).
     */
    cancel: async (id: string): Promise<BulkReplayProgress> => {
      // A replay that ended stays as it ended.
      const before = await read(id);
      if (before.state !== "running") return before;
      const cancelled = await progress.cancel(id);
      if (cancelled?.queuingEnded) await withdraw(id, before.total);
      return read(id);
    },

    read,
  };
}
