import { randomUUID, createHash } from "node:crypto";
import type { Queue, Job, Worker } from "bullmq";
import type { EventLog, EventQuery, EventSummary, LoggedEvent } from "../mirror/event-log.js";
import { type EventJobData, jobYetToStart } from "../queue/events-queue.js";
import { replayJobId } from "../queue/job-ids.js";
import type { StepStore } from "../mirror/step-store.js";
import { EventLogError } from "../mirror/errors.js";
import { EVENT_QUERY_PARAMS, eventQueryFromParams, REPLAY_FILTER_FIELDS, validateEventQuery } from "../mirror/event-log.js";
import type { Logger } from "pino";
import { type RedisClient, redisKeys } from "../redis/redis.js";
import { OperatorActionError } from "./errors.js";
import { accountParam } from "../mirror/accounts.js";
import { carriedAccount } from "../config/defaults.js";

export interface ReplayOptions {
  /** Which logged events to replay (time range, type or family, status, handler outcome). */
  query: EventQuery;
  /** Run only this handler key on each replayed event (the others count as done). */
  handler?: string | undefined;
  /** Count and report, queue nothing. */
  dryRun?: boolean;
  /**
   * Forget the events' durable steps in this store (of `handler` only, when given) before queuing
   * them, so the replay runs every step again instead of returning the stored results (--fresh).
   */
  fresh?: Pick<StepStore, "forget">;
  /** The bulk replay these jobs belong to (its progress counts them as they end). */
  bulk?: string;
  /**
   * Removes what BullMQ still holds of the replayed events (their failed jobs), page by page, so
   * a later retry of a failed job cannot run a handler the replay already ran.
   */
  removeFailedJobs?: (eventIds: readonly string[]) => Promise<unknown>;
  /** Asked before each event is queued: true ends the replay there (a bulk replay's cancel). */
  stop?: () => Promise<boolean>;
  /** Called after each page with the running count (a progress bar, a log line). */
  onProgress?: (count: number, page: readonly EventSummary[]) => void;
  /** The registered account whose events these are (its part of the log): each job runs as its event. */
  account?: string;
}

const PAGE = 500;
/** Payload bytes queued per addBulk: a page of 1 MB events is sent in parts, not held whole. */
const BATCH_BYTES = 8 * 1024 * 1024;

/**
 * Queues logged events again as deliberate redeliveries: each gets a fresh job id and no
 * deduplication, so the edge's window does not drop it. Returns how many it queued (or would).
 */
export async function replayEvents(
  deps: { eventLog: Pick<EventLog, "query" | "get">; queue: Queue<EventJobData> | undefined },
  options: ReplayOptions,
): Promise<number> {
  let count = 0;
  let cursor: string | undefined;
  do {
    const page = await deps.eventLog.query({ ...options.query, limit: PAGE, ...(cursor ? { cursor } : {}) });
    const ids = page.data.map((event) => event.id);
    if (options.fresh && !options.dryRun) await options.fresh.forget(ids, options.handler);
    if (!options.dryRun && page.data.length > 0) {
      if (!deps.queue) throw new Error("replayEvents needs a queue unless dryRun is set");
      await options.removeFailedJobs?.(ids);
      const queued = await queuePage(deps.eventLog, deps.queue, page.data, options, count);
      count += queued.count;
      if (queued.stopped) return count;
    } else count += page.data.length;
    options.onProgress?.(count, page.data);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return count;
}

/**
 * Lists carry no payloads: each event is read whole, and the jobs go to the queue in batches of
 * at most BATCH_BYTES of payload. An event pruned since the list was read is skipped (not counted).
 * A bulk replay's jobs are numbered from `first` (see replayJob).
 */
async function queuePage(
  eventLog: Pick<EventLog, "get">,
  queue: Queue<EventJobData>,
  page: readonly EventSummary[],
  options: Pick<ReplayOptions, "handler" | "bulk" | "stop" | "account">,
  first: number,
): Promise<{ count: number; stopped: boolean }> {
  let batch: ReturnType<typeof replayJob>[] = [];
  let bytes = 0;
  let queued = 0;
  const flush = async () => {
    if (batch.length > 0) await queue.addBulk(batch);
    queued += batch.length;
    batch = [];
    bytes = 0;
  };
  for (const summary of page) {
    if (await options.stop?.()) {
      await flush();
      return { count: queued, stopped: true };
    }
    const event = await eventLog.get(summary.id);
    if (!event) continue;
    batch.push(replayJob(event, { ...options, sequence: first + queued + batch.length }));
    bytes += JSON.stringify(event.payload).length;
    if (bytes >= BATCH_BYTES) await flush();
  }
  await flush();
  return { count: queued, stopped: false };
}

/**
 * The query a replay by filter runs: `handler` selects the events on which that handler failed
 * (and the replay runs only it). The same parser as GET /events: strict, a bad value throws
 * invalid_filter naming the field.
 */
export function replayQueryFromFilter(filter: Record<string, string | undefined>): EventQuery {
  const params = Object.fromEntries(Object.entries(filter).filter(([, value]) => value !== undefined)) as Record<string, string>;
  if (params.handler !== undefined) params.handlerStatus = "failed";
  for (const name of EVENT_QUERY_PARAMS)
    if (name in filter && !(REPLAY_FILTER_FIELDS as readonly string[]).includes(name))
      throw new EventLogError("invalid_filter", name, `a replay filter takes ${REPLAY_FILTER_FIELDS.join(", ")}; not ${name}`);
  const query = eventQueryFromParams(params);
  // Checked now (statuses, type patterns), not when the first page is read: a bad value is the caller's error.
  validateEventQuery(query);
  return query;
}

/** A replay job of one logged event: no deduplication (a deliberate redelivery); its id: job-ids.ts replayJobId. */
export function replayJob(
  event: Pick<LoggedEvent, "id" | "type" | "payload">,
  options: Pick<ReplayOptions, "handler" | "bulk"> & { sequence?: number; account?: string } = {},
) {
  const { handler, bulk, sequence, account } = options;
  const data: EventJobData = {
    id: event.id,
    type: event.type,
    receivedAt: new Date().toISOString(),
    payload: event.payload as Record<string, unknown>,
    // A run of its own: attempt 1 of JOB_ATTEMPTS, replay k in the log (attempt-runner.ts' attemptOfJob).
    replay: true,
    ...(handler ? { only: [handler] } : {}),
    ...(bulk ? { bulk } : {}),
    ...(account === undefined ? {} : { account }),
  };
  const jobId = replayJobId(bulk !== undefined && sequence !== undefined ? { id: bulk, sequence } : undefined);
  return { name: event.type, data, opts: { jobId } };
}

export interface BulkReplayDeps {
  eventLog: Pick<EventLog, "get" | "query">;
  /** A registered account's part of the event log and its steps (storage.forAccount): where its replays read and forget. */
  accountStores?: (account: string) => { eventLog: Pick<EventLog, "get" | "query">; steps: Pick<StepStore, "forget"> };
  /** Built by createEventsQueue: the replays get the events queue's retries and retention. */
  eventsQueue: Queue<EventJobData>;
  redis: RedisClient;
  prefix: string;
  /** For `fresh` replays: the durable steps to forget. */
  steps?: Pick<StepStore, "forget">;
  /** BULK_REPLAY_CONFIRM_ABOVE: more events than this need `confirm` (the dry run's count). */
  confirmAbove: number;
  /** Takes the replayed events' failed jobs of the account off the events queue (removeReplayedFailedJobs). */
  removeFailedJobs: (eventIds: readonly string[], account?: string) => Promise<unknown>;
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
  /** Whose events (`?account=`; none: default). */
  account?: string;
}

/** The 40-hex-digit digest of `parts` that every replay key and deduplication id is named by (separated by NUL, so no two lists join alike). */
export const digest = (...parts: string[]) => createHash("sha256").update(parts.join("\u0000")).digest("hex").slice(0, 40);

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
      const jobId = replayJobId({ id, sequence: n });
      if (jobYetToStart(await deps.eventsQueue.getJobState(jobId))) withdrawn += await deps.eventsQueue.remove(jobId);
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
      const account = accountParam(request.account);
      const own = carriedAccount(account);
      const stores = own === undefined ? { eventLog: deps.eventLog, steps: deps.steps } : deps.accountStores?.(own);
      if (!stores) throw new OperatorActionError("invalid_request", `this process reads no registered account's events (${own})`);
      const count = await replayEvents({ eventLog: stores.eventLog, queue: undefined }, { query, dryRun: true });
      if (request.dryRun) return { count };
      // One replay at a time per filter of each account: another account's identical filter is another replay.
      const filter = canonicalFilter({ ...request.filter, ...(own === undefined ? {} : { account: own }) });
      const params = digest(`${filter} fresh=${request.fresh === true}`);
      const idemKey = request.idempotencyKey ? keys.idempotency(digest("bulk", request.idempotencyKey)) : undefined;
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
          { eventLog: stores.eventLog, queue: deps.eventsQueue },
          {
            query,
            handler: request.filter.handler,
            bulk: id,
            removeFailedJobs: (ids) => deps.removeFailedJobs(ids, own),
            stop: () => progress.cancelled(id),
            ...(request.fresh && stores.steps ? { fresh: stores.steps } : {}),
            ...(own === undefined ? {} : { account: own }),
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

type Progress = ReturnType<typeof bulkReplayProgress>;

// Takes the filter's slot when it is still what the caller saw (ARGV[2], "" for empty); else answers who holds it.
const TAKE_SLOT = `local held = redis.call("get", KEYS[1]) or ""
if held ~= ARGV[2] then return held end
redis.call("set", KEYS[1], ARGV[1], "EX", ARGV[3]) return false`;

/**
 * Refuses a bulk replay whose count is not the one the caller confirmed, or that is above
 * `confirmAbove` (BULK_REPLAY_CONFIRM_ABOVE) with no confirmation: 409 confirm_required.
 */
function refuseUnconfirmed(count: number, confirm: number | undefined, confirmAbove: number): void {
  if (confirm === count || (confirm === undefined && count <= confirmAbove)) return;
  throw new OperatorActionError(
    "confirm_required",
    confirm === undefined
      ? `the filter matches ${count} events, more than BULK_REPLAY_CONFIRM_ABOVE (${confirmAbove}); send "confirm": ${count} to replay them`
      : `the filter matches ${count} events now, not ${confirm}; count again (dryRun) and send "confirm": ${count}`,
  );
}

/** Holds the filter's slot for `id`, or refuses naming the replay of that filter still running (409 replay_running). */
async function takeFilterSlot(redis: RedisClient, progress: Progress, slot: string, id: string): Promise<void> {
  let seen = "";
  for (;;) {
    const held = (await redis.eval(TAKE_SLOT, 1, slot, id, seen, BULK_REPLAY_TTL_SECONDS)) as string | null;
    if (held === null) return;
    if ((await progress.read(held))?.state === "running")
      throw new OperatorActionError(
        "replay_running",
        `bulk replay ${held} of this filter is still running (GET /events/replays/${held}; stop it: DELETE /events/replays/${held})`,
      );
    seen = held;
  }
}

/** An Idempotency-Key seen before: its replay, or a refusal when it came with other parameters (422). */
async function earlierAnswer(redis: RedisClient, progress: Progress, key: string, params: string) {
  const stored = await redis.get(key);
  if (stored === null) return undefined;
  const [storedParams, id = ""] = stored.split(" ");
  refuseReusedKey(storedParams, params, "other parameters (filter, fresh)");
  return { count: (await progress.read(id))?.total ?? 0, id };
}

/**
 * The one refusal of an Idempotency-Key (a single replay's or a bulk one's) whose `stored`
 * parameters are not this request's: 422 idempotency_key_reused, naming what `differs`.
 */
export function refuseReusedKey(stored: string | null | undefined, params: string, differs: string): void {
  if (stored !== params)
    throw new OperatorActionError(
      "idempotency_key_reused",
      `this Idempotency-Key was used with ${differs}; send a new key for a new request`,
    );
}

/** How long a bulk replay's progress stays readable after it was started. */
export const BULK_REPLAY_TTL_SECONDS = 7 * 24 * 3600;

export interface BulkReplayProgress {
  id: string;
  /** Events queued (while queuing: the count the dry run gave). */
  total: number;
  /** Replay jobs that ended handled. */
  done: number;
  /** Replay jobs that ended failed for good. */
  failed: number;
  /** Replay jobs taken off the queue unrun by a cancel. */
  withdrawn: number;
  state: "running" | "done" | "cancelled";
}

/** A bulk replay's progress record in Redis: created when it starts, counted on by every worker. */
function bulkReplayProgress(redis: RedisClient, prefix: string) {
  const key = (id: string) => redisKeys(prefix).operator.bulkReplay(id);
  return {
    start: (id: string, total: number) => redis.multi().hset(key(id), { total, queued: 0 }).expire(key(id), BULK_REPLAY_TTL_SECONDS).exec(),
    /**
     * Queuing has ended: `total` becomes the number actually queued. True when a cancel came
     * first (its caller then withdraws what it queued: the cancel could not, queuing still ran).
     */
    async queued(id: string, total: number): Promise<boolean> {
      const answers = await redis.multi().hset(key(id), { total, queued: 1 }).hget(key(id), "cancelled").exec();
      return answers?.[1]?.[1] === "1";
    },
    /**
     * Marks it cancelled: undefined when there is no such replay, else whether queuing had
     * already ended (then the canceller withdraws the queued jobs; else the queuing loop does).
     */
    async cancel(id: string): Promise<{ queuingEnded: boolean } | undefined> {
      const queued = (await redis.eval(CANCEL_IF_EXISTS, 1, key(id))) as string | null | number;
      if (queued === 0) return undefined;
      return { queuingEnded: queued === "1" };
    },
    /** Forgets a replay that never queued anything (its request was refused after all). */
    discard: (id: string) => redis.del(key(id)),
    cancelled: async (id: string) => (await redis.hget(key(id), "cancelled")) === "1",
    async withdrew(id: string, count: number): Promise<void> {
      if (count > 0) await redis.hincrby(key(id), "withdrawn", count);
    },
    async read(id: string): Promise<BulkReplayProgress | undefined> {
      const fields = await redis.hgetall(key(id));
      if (fields.total === undefined) return undefined;
      const [total = 0, done = 0, failed = 0, withdrawn = 0] = ["total", "done", "failed", "withdrawn"].map((f) => Number(fields[f] ?? 0));
      const state = fields.cancelled === "1" ? "cancelled" : fields.queued === "1" && done + failed >= total ? "done" : "running";
      return { id, total, done, failed, withdrawn, state };
    },
  };
}

/**
 * Counts the end of each bulk replay's job into its progress: handled, or failed for good (a
 * failure that will be retried is not an end; BullMQ sets `finishedOn` only on the last one).
 */
export function trackBulkReplays(worker: Pick<Worker<EventJobData>, "on">, redis: RedisClient, prefix: string): void {
  const count = (job: Job<EventJobData> | undefined, field: "done" | "failed") => {
    const bulk = job?.data.bulk;
    if (!bulk) return;
    // A progress record that expired is not brought back by a late job.
    void redis.eval(INCR_IF_EXISTS, 1, redisKeys(prefix).operator.bulkReplay(bulk), field).catch(() => undefined);
  };
  worker.on("completed", (job) => count(job, "done"));
  worker.on("failed", (job) => {
    if (job?.finishedOn) count(job, "failed");
  });
}

// 0 when there is no such replay, else its `queued` field (nil while queuing runs).
const CANCEL_IF_EXISTS = `if redis.call("exists", KEYS[1]) == 0 then return 0 end redis.call("hset", KEYS[1], "cancelled", 1) return redis.call("hget", KEYS[1], "queued")`;
const INCR_IF_EXISTS = `if redis.call("exists", KEYS[1]) == 1 then return redis.call("hincrby", KEYS[1], ARGV[1], 1) end return 0`;

/** Failed jobs read per call while looking for an event's. */
const FAILED_PAGE = 200;

/**
 * Removes the failed jobs (BullMQ's dead letters) of these events from `queue`: once a replay
 * took an event over, retrying its old failed job by hand (`replay <job-id>`, bull-board's
 * "retry") would run its handlers once more. The event log keeps each attempt's outcome and
 * stack, so nothing is lost. Returns the ids of the removed jobs.
 *
 * The failed set is bounded by KEEP_FAILED_JOBS, so one pass over it is bounded too.
 */
export async function removeReplayedFailedJobs(
  queue: Pick<Queue, "getFailed" | "remove">,
  eventIds: Iterable<string>,
  account?: string,
): Promise<string[]> {
  const wanted = new Set(eventIds);
  if (wanted.size === 0) return [];
  const matching: string[] = [];
  for (let start = 0; ; start += FAILED_PAGE) {
    const jobs = await queue.getFailed(start, start + FAILED_PAGE - 1);
    for (const job of jobs) {
      // Event ids are unique within a company: a job is the event's when its account is the replay's too.
      const data = job.data as { id?: unknown; account?: unknown } | undefined;
      if (job.id && typeof data?.id === "string" && wanted.has(data.id) && data.account === account) matching.push(job.id);
    }
    if (jobs.length < FAILED_PAGE) break;
  }
  // Removed after the walk, so removing does not shift the pages being read.
  for (const id of matching) await queue.remove(id);
  return matching;
}
