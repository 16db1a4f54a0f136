import { setMaxListeners } from "node:events";
import type { Queue, Worker, Job } from "bullmq";
import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import type { Metrics } from "../metrics/metrics.js";
import type { ChangeOutbox, MirrorWriter } from "../mirror/change-outbox.js";
import type { EventLog } from "../mirror/event-log.js";
import type { StepStore } from "../mirror/step-store.js";
import type { MirrorStore } from "../mirror/mirror-store.js";
import type { SyncCheckpoints } from "../mirror/sync-checkpoints.js";
import { createEventsQueue, createEventWorker, createJobRestorer, createSyncQueue, isDeadLetterPlacement } from "../queue/events-queue.js";
import { EVENTS_QUEUE, type EventJobData } from "../queue/events-queue.js";
import { createStreamConsumer, ENVELOPE_ROOM_BYTES } from "../queue/stream-consumer.js";
import type { IngestedEvent } from "../queue/ingest-stream.js";
import type { RedisClient } from "../redis/redis.js";
import type { Tracing } from "../tracing/tracing.js";
import { tracedMirror } from "../mirror/traced-mirror.js";
import { isPermanentUpstreamError } from "../upstream/errors.js";
import { createChangeFeed } from "./change-feed.js";
import { laterListeners } from "../events/change-listeners.js";
import { type EventHandlers, createHandlerTable, adoptNamedHandlerKeys, type SharedHandlerContext } from "./handlers.js";
import { apiAtCall, apiNotConfigured, meteredUpstreams, type Upstream, type Upstreams } from "./upstream.js";
import { createRefreshRequests, type RefreshRequests } from "../sync/refresh-queue.js";
import {
  createSyncSchedules,
  createSyncWorker,
  queueForAccounts,
  syncProcessors,
  SYNC_JOBS,
  FULL_TICK_MS,
  syncSlots,
  type AccountSync,
  type SyncAccounts,
  type SyncJobData,
} from "./sync-worker.js";
import { carriedAccount, DEFAULT_ACCOUNT } from "../config/defaults.js";
import { belongsToAccount, type AccountKeys } from "../mirror/accounts.js";
import type { ApiClient } from "../upstream/client.js";
import { workerLifecycle, type StopDeadlines } from "./worker-lifecycle.js";
import type { HandlerRegistry } from "../events/dispatch.js";
import { createAttemptRunner, type AttemptLog } from "../queue/attempt-runner.js";
import { isChangeEventType, isKnownEventType } from "../events/catalog.js";
import { RECONCILE_JOBS } from "../sync/reconcile-jobs.js";
import { AccountError, EventLogError } from "../mirror/errors.js";
import type { ProblemTracker } from "../problems/problem-tracker.js";
import { upstreamOutcomeReporter } from "../problems/upstream-facts.js";
import { handlerOutcomes, syncJobCompleted, syncJobGivenUp } from "../problems/job-facts.js";
import { checkFreshness, STALE_INTERVALS } from "../problems/freshness.js";

export type WorkerRole = ReturnType<typeof createWorkerRole>;

export interface WorkerRoleDeps {
  config: Config;
  logger: Logger;
  connection: RedisClient;
  mirror: MirrorStore;
  eventLog: EventLog;
  /** A registered account's stores (storage.forAccount); without it every event is recorded and handled in the default's. */
  forAccount?: (account: string) => {
    eventLog: Pick<EventLog, "recordAttempt" | "holds" | "waiting">;
    mirror: MirrorStore;
    steps: StepStore;
    checkpoints: SyncCheckpoints;
  };
  /** The registered accounts' ids (accounts.ts): whose waiting events a restore pass and the tiers' ticks also reach. */
  accounts?: () => Promise<string[]>;
  /**
   * A registered account's key (the directory, accounts.ts): what its sync and `ctx.api` call
   * with; undefined once it is removed; throws AccountsUnavailableError while unknown.
   */
  keysOf?: (account: string) => Pick<AccountKeys, "apiKey" | "incarnation"> | undefined;
  changeOutbox: ChangeOutbox;
  /** Durable steps' results (ctx.step). */
  steps: StepStore;
  /** Where the full reconciliation tier and backfill stand (sync_checkpoints). */
  checkpoints: SyncCheckpoints;
  handlers: readonly EventHandlers[];
  metrics: Metrics;
  /** Given when tracing is on: a span per handler, the refresh job in its event's trace, upstream spans. */
  tracing?: Tracing;
  /**
   * The problem notifications' delivery (alerts/alerts.ts createAlerts): its worker runs and stops
   * with the role's others, on the role's connection. It logs its own failed attempts.
   */
  alerts?: { deliveryWorker(connection: RedisClient): Worker };
  /** Told the facts the worker meets (upstream calls, given-up sync jobs, failure groups): problems/. */
  problems?: ProblemTracker;
}

/**
 * Follows the registered accounts: starts the sync of those this process had not seen (their
 * full tier's tick, which starts a first import on an empty mirror; deduplicated per account
 * across processes), and gives the sync worker a slot per account beside WORKER_CONCURRENCY,
 * up to MAX_ACCOUNT_SLOTS.
 * A job waiting for its key's budget holds its slot, so with fewer slots than importing
 * accounts the imports would take turns instead of each reading at its own key's rate.
 */
function followAccounts(
  { added, count }: { added: readonly string[]; count: number },
  deps: { syncing: boolean; syncWorker: { concurrency: number }; syncQueue: Queue<SyncJobData>; config: Config; logger: Logger },
): void {
  const { config, logger } = deps;
  if (!deps.syncing) return;
  deps.syncWorker.concurrency = syncSlots(config.worker.concurrency) + Math.min(count, MAX_ACCOUNT_SLOTS);
  if (config.worker.reconcileIntervalMs <= 0 || added.length === 0) return;
  queueForAccounts(deps.syncQueue, RECONCILE_JOBS.full, {}, added).catch((err: unknown) =>
    logger.warn({ err: (err as Error).message }, "new accounts' first sync not queued; the next tick queues it"),
  );
}

/**
 * Aborted at the shutdown's drain deadline: a read the API holds never outlasts the stop. Every
 * call in flight listens to it, one per account's read at once: many listeners are the design, not a leak.
 */
function upstreamStopper(): AbortController {
  const stop = new AbortController();
  setMaxListeners(0, stop.signal);
  return stop;
}

/**
 * The worker side: typed handlers per event (built-in sync plus the user's), every event and
 * handler outcome recorded in the event log, and the sync queue whose refresh and reconcile jobs
 * read the API into the mirror (and whose hourly job prunes the event log). Built in steps: the
 * queues, the upstream, the change feed (relay), the refresh requests, the handler table, event
 * delivery, the sync jobs and their schedules.
 */
export function createWorkerRole(deps: WorkerRoleDeps) {
  const { config, logger, connection, metrics, tracing } = deps;
  // With tracing on, each mirror write (refreshes, sweeps, handlers) is a span of its trace.
  const mirror = tracing ? tracedMirror(deps.mirror, tracing.tracer) : deps.mirror;
  const eventsQueue = createEventsQueue({ connection, config, logger });
  // A refresh job carries the trace of the event that scheduled it (bullmq-otel).
  const syncQueue = createSyncQueue<SyncJobData>({ connection, config, logger, ...(tracing ? { telemetry: tracing.bullmq } : {}) });
  const upstreamStop = upstreamStopper();
  const { feed, refreshOf, main, accountSync, listening } = createSyncParts(deps, {
    mirror,
    eventsQueue,
    syncQueue,
    signal: upstreamStop.signal,
  });
  const api = main?.upstream.api;
  const { keysOf } = deps;
  const table = createHandlerTable({
    logger,
    mirror,
    steps: deps.steps,
    api,
    refresh: (account) => refreshOf(account).queue,
    handlers: deps.handlers,
    tracing,
    ...(deps.forAccount ? { forAccount: deps.forAccount } : {}),
    ...(accountSync ? { apiOf: accountSync.apiOf } : {}),
    ...(keysOf ? { belongs: (account: string, incarnation?: string) => belongsToAccount(keysOf, account, incarnation) } : {}),
  });
  listening.bind(table.listensToChange); // who receives a change: the table's answer, asked by the feed built before it
  const delivery = createEventDelivery({ ...deps, mirror, eventsQueue, registry: table.dispatch });
  const processors = syncProcessors({ ...deps, syncQueue, main, accounts: accountSync });
  const syncWorker = createSyncWorker({
    connection,
    prefix: config.queuePrefix,
    queue: syncQueue,
    processors,
    concurrency: config.worker.concurrency,
    lockMs: config.worker.lockMs,
    maxStalls: config.worker.maxStalls,
    logger,
    ...(tracing ? { telemetry: tracing.bullmq } : {}),
  });
  const { streamConsumer, eventWorker } = delivery;
  const restorer = eventsRestorer(deps, eventsQueue);
  // The start heals once: not again when the gap watch's first tick already did (Redis found emptied).
  let healed = false;
  const heal = async () => {
    await restorer.pass();
    healed = true;
  };
  const schedules = createSyncSchedules({
    ...deps,
    syncQueue,
    syncing: api !== undefined,
    restore: async () => {
      await streamConsumer.ensureGroup();
      await heal();
    },
  });
  const freshness = watchProblems(deps, syncWorker, api !== undefined);
  const workers = [eventWorker, syncWorker];
  observeJobs(workers, { metrics, logger });
  const alertWorker = deps.alerts?.deliveryWorker(connection);
  const lifecycle = workerLifecycle({
    logger,
    prepare: () => adoptNamedHandlerKeys(table.registry.registered(), deps.steps, logger),
    schedule: () => schedules.schedule(),
    heal: async () => {
      if (!healed) await heal();
    },
    gapWatch: schedules.gapWatch,
    workers: alertWorker ? [...workers, alertWorker] : workers,
    streamConsumer,
    changeRelay: feed.relay,
    queues: [eventsQueue, syncQueue],
    upstreamStop,
  });
  return {
    api,
    /** Retries, replays, change events and entries a dead consumer left. */
    eventsQueue,
    syncQueue,
    /** Handles events straight from the edge's ingest stream (their first attempt). */
    streamConsumer,
    /** Handles the events queue's jobs. */
    eventWorker,
    syncWorker,
    /** Moves change events from the outbox into the events queue. */
    changeRelay: feed.relay,
    /** True while the event log refuses this process's attempts (the database is away or full). */
    recordingFails: () => delivery.recording.failing(),
    /** The keys of the handlers an event of `type` runs (what a replay may aim at). */
    handlerKeys: (type: string) => table.registry.handlersFor(type).map((h) => h.key),
    /** Follows the registered accounts (followAccounts). */
    accountsChanged: (change: { added: readonly string[]; count: number }) =>
      followAccounts(change, { syncing: accountSync !== undefined, syncWorker, syncQueue, config, logger }),
    /** Swaps in new user handlers (dev's HANDLERS_MODULE reload); a map that does not register throws and changes nothing. */
    reloadHandlers: (handlers: readonly EventHandlers[]) => void table.replace(handlers),
    /** Calls `listener` for every attempt this process finishes (either path); returns the unsubscribe function. */
    onFinished: (listener: (event: FinishedEvent) => void) => delivery.finished.on(listener),
    /** Looks at each account's mirror kinds as of `now` (mirror_stale); what the worker does every minute. */
    checkFreshness: (now: number) => freshness.check(now),
    start: () => lifecycle.start().then(() => freshness.start()),
    /**
     * Drains (stream entries, active jobs) until the `drain` deadline, then aborts upstream reads in
     * flight and closes anyway (their jobs rerun); the relay and the queues close by `close`.
     */
    stop: (deadlines: StopDeadlines) => lifecycle.stop(deadlines).finally(() => freshness.stop()),
  };
}

/**
 * The most sync slots the accounts add beside WORKER_CONCURRENCY: enough for a hundred companies'
 * first imports to read at their own keys' rates at once. Past it, imports take turns (a thousand
 * companies of twenty orders each still import in under a minute) and the heap holds the pages of
 * a hundred at a time, not a thousand (bench/results/accounts.md, row 2).
 */
const MAX_ACCOUNT_SLOTS = 100;

/** Enqueues again the events the log holds as waiting for a retry whose jobs Redis lost: every account's. */
function eventsRestorer(deps: WorkerRoleDeps, queue: Queue<EventJobData>) {
  const { config, forAccount, accounts } = deps;
  return createJobRestorer({
    log: deps.eventLog,
    ...(forAccount && accounts
      ? { accountLogs: async () => (await accounts()).map((account) => ({ account, log: forAccount(account).eventLog })) }
      : {}),
    queue,
    connection: deps.connection,
    attempts: config.worker.attempts,
    backoffMs: config.worker.backoffMs,
    dedupTtlMs: config.dedupWindowSeconds * 1000,
    onRestored: (count) => deps.metrics.eventsRestored.inc(count),
    logger: deps.logger,
  });
}

/**
 * What the sync reads and writes through: the upstreams (one per key), the change feed, each
 * account's refresh requests, and the sync of `default` (undefined without an upstream API) and of
 * the registered accounts.
 */
function createSyncParts(
  deps: WorkerRoleDeps,
  own: { mirror: MirrorStore; eventsQueue: Queue<EventJobData>; syncQueue: Queue<SyncJobData>; signal: AbortSignal },
) {
  const { config, logger, connection, metrics, tracing } = deps;
  const { mirror, syncQueue } = own;
  const { problems } = deps;
  const upstreams = meteredUpstreams({
    config,
    connection,
    logger,
    metrics,
    tracing,
    signal: own.signal,
    ...(problems ? { outcomesOf: (account: string) => upstreamOutcomeReporter(problems, account) } : {}),
  });
  // Bound to the handler table once it is built (its sync handlers need the refresh requests made here).
  const listening = laterListeners();
  const feed = createChangeFeed({
    config,
    logger,
    metrics,
    mirror,
    outbox: deps.changeOutbox,
    eventsQueue: own.eventsQueue,
    listens: listening.listens,
    tracing,
  });
  const refreshOf = createRefreshRequests({ config, connection, syncQueue, tracing });
  const main: AccountSync | undefined = upstreams && {
    account: DEFAULT_ACCOUNT,
    upstream: upstreams.main,
    mirror,
    checkpoints: deps.checkpoints,
    writer: feed.writer,
    refresh: refreshOf(),
    logger,
  };
  return { feed, refreshOf, main, listening, accountSync: syncOfAccounts({ ...deps, upstreams, refreshOf, writerOf: feed.writerOf }) };
}

/**
 * The registered accounts' sync and API, each on its own key (its own budget) and its own stores:
 * built when a job or a handler first needs it, and again when its key was replaced. Undefined
 * without accounts (a library user's worker) or without an upstream API.
 */
function syncOfAccounts(
  deps: Pick<WorkerRoleDeps, "logger" | "forAccount" | "accounts" | "keysOf" | "tracing"> & {
    upstreams: Upstreams | undefined;
    refreshOf: (account: string) => RefreshRequests;
    writerOf: (mirror: MirrorStore) => MirrorWriter;
  },
): (SyncAccounts & { apiOf: (account: string) => ApiClient }) | undefined {
  const { forAccount, accounts, keysOf, upstreams, tracing } = deps;
  if (!forAccount || !accounts || !keysOf || !upstreams) return undefined;
  const built = new Map<string, { from: Upstream; sync: AccountSync }>();
  const upstreamOf = (account: string) => {
    const keys = keysOf(account);
    return keys && upstreams.forKey(keys.apiKey, account);
  };
  return {
    list: accounts,
    syncOf(account) {
      const upstream = upstreamOf(account);
      if (!upstream) {
        built.delete(account);
        return undefined;
      }
      const known = built.get(account);
      if (known?.from === upstream) return known.sync;
      const stores = forAccount(account);
      const mirror = tracing ? tracedMirror(stores.mirror, tracing.tracer) : stores.mirror;
      const sync: AccountSync = {
        account,
        // Asked before every call: once the account is removed, or its key replaced, a job in
        // flight makes no further call with the old key (its next attempt finds the new one, or nothing).
        upstream: {
          ...upstream,
          api: apiAtCall(() => {
            if (upstreamOf(account) !== upstream)
              throw new AccountError("account_not_found", `account ${account} was removed or given another key since its job began`);
            return upstream.api;
          }),
        },
        mirror,
        checkpoints: stores.checkpoints,
        writer: deps.writerOf(mirror),
        refresh: deps.refreshOf(account),
        logger: deps.logger.child({ account }),
      };
      built.set(account, { from: upstream, sync });
      return sync;
    },
    apiOf: (account) => upstreamOf(account)?.api ?? apiNotConfigured(`account ${account} is not registered`),
  };
}

/**
 * The delivery path of the worker: one attempt runner (deadline, dispatch, record, verdict) that
 * both sources share, the stream consumer for first attempts, and the events queue's worker for
 * the rest; both report each finished attempt to one feed and to the same metrics.
 */
function createEventDelivery(
  deps: Pick<
    WorkerRoleDeps,
    "config" | "logger" | "connection" | "metrics" | "mirror" | "eventLog" | "forAccount" | "keysOf" | "problems"
  > & {
    eventsQueue: Queue<EventJobData>;
    registry: HandlerRegistry<SharedHandlerContext>;
  },
) {
  const { config, logger, connection, metrics, mirror, forAccount, keysOf } = deps;
  /** Whether the event log takes this process's attempts. */
  const recording = watchRecording(deps.eventLog, forAccount && ((account) => forAccount(account).eventLog), deps.problems);
  const runner = createAttemptRunner<SharedHandlerContext>({
    registry: deps.registry,
    handlerTimeoutMs: config.worker.handlerTimeoutMs,
    logger,
    eventLog: recording.eventLog,
    makeContext: (_event, attempt, log, signal, data) => ({
      mirror,
      logger: log,
      attempt,
      signal,
      ...(data.incarnation === undefined ? {} : { incarnation: data.incarnation }),
    }),
    isPermanent: isPermanentUpstreamError,
    // An event of an account removed (or added again) since it arrived is neither run nor recorded.
    ...(keysOf
      ? {
          belongs: (data: IngestedEvent) => belongsToAccount(keysOf, data.account, data.incarnation),
          onDropped: () => metrics.eventsDropped.inc(),
        }
      : {}),
  });
  const { concurrency, lockMs, maxStalls, backoffMs } = config.worker;
  // What both sources of attempts share: the runner, the worker connection, the handler slots.
  const shared = { connection, prefix: config.queuePrefix, runner, concurrency, logger };
  /** Handles the events queue's jobs: retries, replays, change events, entries a dead consumer left. */
  const eventWorker = createEventWorker({ ...shared, lockMs, maxStalls, heldRetryMs: backoffMs });
  /** Every attempt either of them finished. */
  const finished = createFinishedEvents(eventWorker);
  /** Handles events straight from the edge's ingest stream (their first attempt). */
  const streamConsumer = createStreamConsumer({
    ...shared,
    queue: deps.eventsQueue,
    maxInflightBytes: config.worker.maxInflightBytes,
    concurrencyPerAccount: config.worker.concurrencyPerAccount,
    // The edge's body limit plus the envelope: a read never asks for more than the budget holds.
    largestEntryBytes: config.maxBodyBytes + ENVELOPE_ROOM_BYTES,
    attempts: config.worker.attempts,
    backoffMs,
    dedupWindowSeconds: config.dedupWindowSeconds,
    batchSize: config.ingest.batchSize,
    claimIdleMs: config.ingest.claimIdleMs,
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

/** One event whose attempt a worker finished (its handlers ran, or it failed for good), on either path. */
export interface FinishedEvent {
  id: string;
  type: string;
  /** completed (every handler ok), failed (for good), or retried (it runs again later from the events queue). */
  outcome: "completed" | "failed" | "retried";
  /** stream: its first attempt, straight from the ingest stream; queue: a job of the events queue. */
  via: "stream" | "queue";
}

/** One feed of finished attempts for both paths: the stream consumer's and the event worker's jobs. */
function createFinishedEvents(eventWorker: Worker<EventJobData>) {
  const listeners = new Set<(event: FinishedEvent) => void>();
  /** Tells every listener (the stream consumer's attempts; the event worker's jobs are seen below). */
  const emit = (event: FinishedEvent) => {
    for (const listener of listeners) listener(event);
  };
  eventWorker.on("completed", (job) => emit({ id: job.data.id, type: job.data.type, outcome: "completed", via: "queue" }));
  eventWorker.on("failed", (job) => {
    // A dead letter's placement was reported (as failed) when its attempt on the stream finished.
    if (!job || isDeadLetterPlacement(job, true)) return;
    emit({ id: job.data.id, type: job.data.type, outcome: isFinalFailure(job) ? "failed" : "retried", via: "queue" });
  });
  return {
    emit,
    /** Calls `listener` for every finished attempt; returns the unsubscribe function. */
    on(listener: (event: FinishedEvent) => void): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

/** Job names are event types, which senders choose: keep the label set bounded. */
function jobLabel(name: string): string {
  return isKnownEventType(name) || isChangeEventType(name) || SYNC_JOBS.includes(name) ? name : "other";
}

/** Whether a failed attempt was the job's last (no retry follows). */
function isFinalFailure(job: Job): boolean {
  return job.attemptsMade >= (job.opts.attempts ?? 1) || job.finishedOn !== undefined;
}

/** Counts and times every finished job, and logs each failed attempt ("failed for good" is the dead letter). */
function observeJobs(workers: readonly Worker[], { metrics, logger }: { metrics: Metrics; logger: Logger }): void {
  for (const w of workers) {
    w.on("completed", (job) => {
      metrics.jobs.inc({ queue: w.name, name: jobLabel(job.name), outcome: "completed" });
      if (job.processedOn && job.finishedOn)
        metrics.jobSeconds.observe({ queue: w.name, name: jobLabel(job.name) }, (job.finishedOn - job.processedOn) / 1000);
    });
    w.on("failed", (job, err) => {
      // Counted and logged when the event failed on the ingest stream.
      if (!job || isDeadLetterPlacement(job as Job<EventJobData>, true)) return;
      const final = isFinalFailure(job);
      metrics.jobs.inc({ queue: w.name, name: jobLabel(job.name), outcome: final ? "failed" : "retried" });
      // An event's failed attempt is the attempt runner's one line (its handlers, the retry).
      if (w.name === EVENTS_QUEUE) return;
      // A sync job given up on is a dead letter: an error line.
      const line = { queue: w.name, jobId: job.id, job: job.name, attempt: job.attemptsMade, err: err.message };
      if (final) logger.error(line, "job failed for good: a dead letter, it waits for a replay");
      else logger.warn(line, "job failed, will retry");
    });
  }
}

/**
 * What the worker tells the problems beside the upstream's outcomes and the handlers': each sync
 * job given up on or completed, and every FULL_TICK_MS whether each account's mirror kinds were
 * refreshed within three reconciliation intervals (problems/freshness.ts; nothing without an API
 * or reconciliation).
 */
function watchProblems(deps: WorkerRoleDeps, syncWorker: Worker, syncing: boolean) {
  const { problems, config } = deps;
  if (problems) reportSyncJobs(syncWorker, problems);
  const intervalMs = config.worker.reconcileIntervalMs;
  // Whom freshness is told: nobody without an API or reconciliation.
  const tracker = syncing && intervalMs > 0 ? problems : undefined;
  let timer: NodeJS.Timeout | undefined;
  const check = async (now: number) => {
    if (!tracker) return;
    const accounts = [DEFAULT_ACCOUNT, ...((await deps.accounts?.()) ?? [])];
    await checkFreshness({
      tracker,
      accounts,
      checkpointsOf: (account) =>
        (account === DEFAULT_ACCOUNT || !deps.forAccount ? deps.checkpoints : deps.forAccount(account).checkpoints).list("full"),
      staleAfterMs: STALE_INTERVALS * intervalMs,
      now,
    });
  };
  return {
    check,
    start() {
      if (!tracker) return;
      timer = setInterval(() => {
        check(Date.now()).catch((err: unknown) =>
          deps.logger.warn({ err: (err as Error).message }, "mirror freshness not checked: checked again in a minute"),
        );
      }, FULL_TICK_MS);
      timer.unref();
    },
    stop: () => clearInterval(timer),
  };
}

/** Tells the problems of each sync job that completed and each given up on (sync_failing). */
function reportSyncJobs(worker: Worker, problems: ProblemTracker): void {
  const of = (job: Job) => ({
    name: job.name,
    account: carriedAccount((job.data as { account?: string } | undefined)?.account) ?? DEFAULT_ACCOUNT,
    id: job.id,
  });
  worker.on("completed", (job) => syncJobCompleted(problems, of(job)));
  worker.on("failed", (job, err) => {
    if (job && isFinalFailure(job)) syncJobGivenUp(problems, of(job), err);
  });
}

/**
 * Whether the event log takes the worker's attempts: what readiness reports beside a database
 * probe. Watches the event log's writes. A probe alone misses a database that answers `select 1` but
 * cannot write (a full disk); the outcome of the last real write tells.
 */
function watchRecording(
  eventLog: AttemptLog,
  forAccount: ((account: string) => AttemptLog) | undefined,
  problems: ProblemTracker | undefined,
) {
  let failing = false;
  // A registered account's events go to its own part of the log; the log handed in is `default`'s.
  const logOf = (account: string | undefined): AttemptLog => (account === undefined || !forAccount ? eventLog : forAccount(account));
  const watched = async <T>(call: Promise<T>): Promise<T> => {
    try {
      const answer = await call;
      failing = false;
      return answer;
    } catch (err) {
      // An event the log can never store says nothing about the database.
      if (!(err instanceof EventLogError && err.code === "invalid_event")) failing = true;
      throw err;
    }
  };
  return {
    /** The log to hand the attempt runner: the event log, watched. */
    eventLog: {
      recordAttempt: async (attempt) => {
        await watched(logOf(attempt.account).recordAttempt(attempt));
        // Each handler's outcome as recorded: the failure groups' problems (handler_failing).
        if (problems) handlerOutcomes(problems, { ...attempt, account: attempt.account ?? DEFAULT_ACCOUNT });
      },
      holds: (id, account) => watched(logOf(account).holds(id)),
    } satisfies AttemptLog,
    /** The last call (a write, or the look-up of a delivery) failed for a reason not the event's own, and none succeeded since. */
    failing: () => failing,
  };
}
