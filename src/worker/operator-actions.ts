import type { Queue } from "bullmq";
import { isCalendarDate as isCalendarDay } from "../base/iso-time.js";
import { printable } from "../base/text.js";
import { redisKeys } from "../redis/redis.js";
import { type BulkReplayDeps, bulkReplays, digest, refuseReusedKey, replayJob, removeReplayedFailedJobs } from "./replays.js";
import { OperatorActionError } from "./errors.js";
import { accountParam } from "../mirror/accounts.js";
import { carriedAccount, DEFAULT_ACCOUNT, DEFAULTS, ownData } from "../config/defaults.js";
import { operatorSyncDeduplicationId, replayDeduplication } from "../queue/job-ids.js";
import { RECONCILE_JOBS } from "../sync/reconcile-jobs.js";
import { activePassRunning } from "../sync/active-pass-lease.js";
import { AccountError } from "../mirror/errors.js";
import type { RefreshNote, RefreshQueue } from "../sync/refresh-queue.js";
import { RESOURCES, SYNCED_KINDS } from "../sync/resources.js";
import type { SyncedKind } from "../mirror/kinds.js";

/**
 * The sync-queue job each operator request adds. Both are the reconciliation sweep today (it
 * covers every kind); a backfill's `kinds` and `since` travel in the job's data for a processor
 * that honours them.
 */
/** "Reconcile now" runs an active pass (what can still change); a backfill reads everything, resumably. */
const OPERATOR_SYNC_JOBS = { reconcile: RECONCILE_JOBS.active, backfill: RECONCILE_JOBS.backfill } as const;
export type OperatorSyncRequest = keyof typeof OPERATOR_SYNC_JOBS;

/** How long an Idempotency-Key's answer is kept (as Stripe does: a day). */
const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

export interface OperatorActionsDeps extends Omit<BulkReplayDeps, "confirmAbove" | "removeFailedJobs"> {
  /** Built by createSyncQueue: the jobs added get the sync queue's retries and retention. */
  syncQueue: Queue;
  /** The handler keys the workers run for a type; absent in a process without the registry (the log's keys then). */
  handlerKeys?: (type: string) => string[];
  /** False when no upstream API is configured: reconcile and backfill have nothing to read. */
  syncAvailable: boolean;
  /** Where an account's record's refresh is asked for: the queue the built-in handlers note its events' ids in. */
  refresh?: (account: string) => Pick<RefreshQueue, "request">;
  /** Whether a registered account exists (the registry): a sync asked for another is refused, 404. */
  accountExists?: (account: string) => Promise<boolean>;
  /** BULK_REPLAY_CONFIRM_ABOVE (its default when absent). */
  confirmAbove?: number;
}

/**
 * What an operator can do to the running system, in one place for the HTTP API and the CLI:
 * replay one event or every event matching a filter, follow a bulk replay, ask for a
 * reconciliation or a backfill. Each is idempotent (see the methods) and removes the failed jobs
 * of the events it replays.
 */
export function createOperatorActions(deps: OperatorActionsDeps) {
  const { eventLog, eventsQueue } = deps;
  const removeFailedJobs = (ids: readonly string[], account?: string) => removeReplayedFailedJobs(eventsQueue, ids, account);
  const bulk = bulkReplays({ ...deps, confirmAbove: deps.confirmAbove ?? DEFAULTS.bulkReplayConfirmAbove, removeFailedJobs });

  /** Ties an Idempotency-Key to its request's parameters: the same key with others is refused (422). */
  async function claimIdempotencyKey(key: string, params: string): Promise<void> {
    const stored = redisKeys(deps.prefix).operator.idempotency(digest("one", key));
    if ((await deps.redis.set(stored, params, "PX", IDEMPOTENCY_TTL_MS, "NX")) === "OK") return;
    refuseReusedKey(await deps.redis.get(stored), params, "another event or handler");
  }

  /** The account a sync request names (`default` when none): a slug, and registered, else refused. */
  async function syncedAccount(account: string | undefined): Promise<string> {
    const id = accountParam(account);
    // A process without the registry (a one-off command) leaves it to the worker, whose job for an unknown account ends skipped.
    if (id !== DEFAULT_ACCOUNT && deps.accountExists && !(await deps.accountExists(id)))
      throw new AccountError("account_not_found", `no account ${id}: its sync stopped with it, or it was never added`);
    return id;
  }

  return {
    /**
     * Replays one logged event (all its handlers, or one). Requested again while the first is
     * still queued, or with the same Idempotency-Key within a day, it answers the same replay id
     * and queues nothing more.
     */
    async replayEvent(id: string, options: { handler?: string; idempotencyKey?: string; account?: string } = {}) {
      // `account` as `?account=` names it (accountParam); default's events are the log's own.
      const account = carriedAccount(accountParam(options.account));
      const log = account === undefined ? eventLog : deps.accountStores?.(account).eventLog;
      if (!log) throw new OperatorActionError("invalid_request", "this process reads the default company's events only");
      const event = await log.get(id);
      if (!event) throw new OperatorActionError("event_not_found", `no event ${printable(id)} in the event log`);
      const known = deps.handlerKeys?.(event.type) ?? Object.keys(event.handlers);
      const { handler, idempotencyKey } = options;
      if (handler !== undefined && !known.includes(handler))
        throw new OperatorActionError(
          "unknown_handler",
          `no handler ${handler} for ${event.type}; handlers: ${known.join(", ") || "none"}`,
        );
      // The account joins every key only when there is one, so default's keys stay as they were.
      const target = account === undefined ? [id, handler ?? "*"] : [id, handler ?? "*", account];
      if (idempotencyKey) await claimIdempotencyKey(idempotencyKey, digest(...target));
      await removeFailedJobs([id], account);
      const job = replayJob(event, { handler, ...(account === undefined ? {} : { account }) });
      const deduplication = replayDeduplication(
        digest(...target),
        idempotencyKey ? { key: digest(idempotencyKey, ...target), ttlMs: IDEMPOTENCY_TTL_MS } : undefined,
      );
      const added = await eventsQueue.add(job.name, job.data, { ...job.opts, deduplication });
      return { event: id, replay: { id: added.id ?? job.opts.jobId, handlers: handler ? [handler] : known } };
    },

    /** Starts a bulk replay, or counts one (dryRun): see replays.ts for its guards. */
    replayMatching: bulk.start,
    /** A bulk replay's progress (404 replay_not_found when unknown or expired). */
    bulkProgress: bulk.read,
    /** Stops a running bulk replay between events (DELETE /events/replays/{id}). */
    cancelBulkReplay: bulk.cancel,

    /**
     * Asks for a narrow read of one record now: notes its id as pending and schedules the kind's
     * refresh job, exactly as an event naming it would (the hints, from the mirror's copy, steer
     * the read). Menus are read whole per restaurant; reviews have no endpoint to read.
     */
    async requestRefresh(kind: string, restaurantId: string, id: string, note: RefreshNote = {}, account?: string): Promise<void> {
      if (!deps.syncAvailable || !deps.refresh)
        throw new OperatorActionError("sync_unavailable", "no upstream API is configured (API_BASE_URL, API_KEY)");
      const whose = await syncedAccount(account);
      if (!SYNCED_KINDS.includes(kind as SyncedKind))
        throw new OperatorActionError(
          "invalid_request",
          `${kind} are stored as delivered: only ${SYNCED_KINDS.join(", ")} are read from the API`,
        );
      const refreshed = RESOURCES[kind as SyncedKind].tracksIds ? id : undefined;
      await deps.refresh(whose).request(kind as SyncedKind, restaurantId, refreshed, note);
    },

    /**
     * Asks the workers for a reconciliation or a backfill: one job on the sync queue. Asked again
     * while that job waits or runs, it answers the same job. A reconciliation asked for while an
     * active pass runs waits for it and runs right after it (`runs` says which).
     */
    async requestSync(
      request: OperatorSyncRequest,
      options: { kinds?: string[]; since?: string; restart?: boolean; account?: string } = {},
    ): Promise<{ job: string; runs?: "now" | "after the running pass" }> {
      if (!deps.syncAvailable) throw new OperatorActionError("sync_unavailable", "no upstream API is configured (API_BASE_URL, API_KEY)");
      const account = await syncedAccount(options.account);
      const problem = syncOptionsProblem(options.kinds, options.since);
      if (problem) throw new OperatorActionError("invalid_request", problem);
      const data: Record<string, unknown> = { requestedBy: "operator", request, ...ownData(account) };
      if (options.kinds !== undefined) data.kinds = options.kinds;
      if (options.since !== undefined) data.since = options.since;
      if (options.restart === true) data.restart = true;
      const deduplication = { id: operatorSyncDeduplicationId(request, account) };
      const job = await deps.syncQueue.add(OPERATOR_SYNC_JOBS[request], data, { deduplication });
      if (request !== "reconcile") return { job: job.id ?? "" };
      const running = await activePassRunning(deps.redis, deps.prefix, account);
      return { job: job.id ?? "", runs: running ? "after the running pass" : "now" };
    },
  };
}

export type OperatorActions = ReturnType<typeof createOperatorActions>;

/**
 * What is wrong with a sync request's kinds or since, if anything: the words of the operator API's
 * refusal, and of the backfill command's (which names them as flags, --kinds and --since).
 */
export function syncOptionsProblem(kinds: readonly string[] | undefined, since: string | undefined): string | undefined {
  const wrong = kinds?.filter((k) => !SYNCED_KINDS.includes(k as SyncedKind)) ?? [];
  if (kinds !== undefined && (wrong.length > 0 || kinds.length === 0))
    return `kinds takes ${SYNCED_KINDS.join(", ")}; not ${wrong.join(", ") || "an empty list"}`;
  if (since !== undefined && !isCalendarDay(since)) return `since takes a date YYYY-MM-DD, not "${since}"`;
}
