import type { Hono } from "hono";
import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import { mountConsole, type ConsoleSources } from "../http/console/console-routes.js";
import type { AppEnv } from "../http/request-log.js";
import { mountOpenApi } from "../http/openapi.js";
import { mountOperatorRoutes, type MirrorReader, type RecordReader, type AccountsPort } from "../http/operator-routes.js";
import { type Metrics, collectOpsSummary } from "../metrics/metrics.js";
import { readMinuteSamples } from "../metrics/minute-samples.js";
import { eventQueryFromParams, listFailureGroups } from "../mirror/event-log.js";
import { filterFromQuery, readBookkeeping, validateRecordId } from "../mirror/mirror-store.js";
import { readEventDetail, readStory, type Storage } from "../mirror/storage.js";
import { MIRROR_KINDS, type MirrorKind } from "../mirror/kinds.js";
import { withTimeout } from "../base/deadline.js";
import { deleteMatching, type RedisClient, redisKeys } from "../redis/redis.js";
import { type OperatorActions, createOperatorActions } from "../worker/operator-actions.js";
import type { Queue } from "bullmq";
import type { EventJobData } from "../queue/events-queue.js";
import { listFailedJobs } from "../queue/failed-jobs.js";
import { trackBulkReplays } from "../worker/replays.js";
import { createRefreshRequests } from "../sync/refresh-queue.js";
import type { WorkerRole } from "../worker/worker-role.js";
import { findRecordKinds, listCausedChanges, listChangesBySource } from "../mirror/record-story.js";
import { OperatorActionError } from "../worker/errors.js";
import { accountParam, type AccountDirectory, type AccountRegistry, type TryKey } from "../mirror/accounts.js";
import { accountNotFound } from "../mirror/errors.js";
import { withSyncState } from "../sync/first-import.js";
import { createProblemStore, withKeyRefused } from "../problems/problem-store.js";
import type { ProblemTracker } from "../problems/problem-tracker.js";
import { upstreamOutcomeReporter } from "../problems/upstream-facts.js";
import { SYNCED_KINDS } from "../sync/resources.js";
import { tryApiKey, upstreamFromConfig } from "../worker/upstream.js";

/** The queue handles the operator reads and acts on (the service holds them in every role). */
export interface OperatorQueues {
  eventsQueue: Queue<EventJobData>;
  syncQueue: Queue;
}

/** How long a console page waits for a read beside its own (the minute samples, the accounts list) before it shows without it. */
const SIDE_READ_MS = 1000;

/** The operator's routes behind ADMIN_TOKEN: the API (/events, /mirror, /records, /sync, /metrics), the dashboard and the console. */
export function operatorMount(deps: {
  adminToken: string;
  config: Config;
  logger: Logger;
  metrics: Metrics;
  storage: Storage;
  queues: OperatorQueues;
  actions: OperatorActions;
  /** For the console's minute samples. */
  connection: RedisClient;
  /** The accounts registry (the service reloads its edge's directory after each change). */
  accounts: AccountsPort;
  /** GET /problems reads the problems table every process shares. */
  problems?: ProblemTracker;
}): (root: Hono<AppEnv>) => void {
  const { adminToken, config, logger, metrics, storage } = deps;
  const samplesKey = redisKeys(config.queuePrefix).minuteSamples;
  // Every operator read is of one account: `?account=`, else default.
  const of = (account: string | undefined) => storage.forAccount(accountParam(account));
  const problemStore = createProblemStore(storage.database.operatorDb);
  return (root) => {
    const mirrorReader: MirrorReader = {
      kinds: MIRROR_KINDS,
      get: (k, id, account) => of(account).operatorMirror.get(k as MirrorKind, validateRecordId(id)),
      list: (k, { account, ...q }) => of(account).operatorMirror.list(k as MirrorKind, filterFromQuery(q)),
    };
    const records = createRecordReader(of, deps.actions);
    // The API's GET /events and the console's event pages read through one reader.
    const events: ConsoleSources["events"] = {
      get: (id, account) => readEventDetail(of(account), id),
      query: ({ account, ...params }) => of(account).eventLog.query(eventQueryFromParams(params)),
    };
    mountOperatorRoutes(root, {
      adminToken,
      mirror: mirrorReader,
      events,
      metrics: () => metrics.render(),
      queues: [deps.queues.eventsQueue, deps.queues.syncQueue],
      actions: { port: deps.actions, logger },
      records,
      accounts: deps.accounts,
      problems: { list: (query) => problemStore.list(query) },
    });
    // The document of the routes above, readable without the token.
    mountOpenApi(root, { syncedKinds: SYNCED_KINDS });
    // What the console reads, wired to the storage and the metrics (http imports neither).
    const reader = storage.database.operatorDb;
    const timeoutMs = storage.database.operatorQueryTimeoutMs;
    // The upstream budget per window is the API's rate, when the service has an API.
    const summary = () => collectOpsSummary(metrics, { kinds: MIRROR_KINDS, rateMax: config.api?.rate });
    // Every worker's minute samples of the hour up to `now`; Redis away: the charts say "no samples yet" rather than hold the page.
    const samples = (now: Date) =>
      withTimeout(readMinuteSamples(deps.connection, samplesKey, { now: now.getTime() }), SIDE_READ_MS, "minute samples").catch(() => []);
    // The limits the health rules scale with.
    const limits = { maxBacklog: config.ingest.maxBacklog, reconcileIntervalSeconds: config.worker.reconcileIntervalMs / 1000 };
    const sources: ConsoleSources = {
      events,
      changesAfter: (event, account) => listCausedChanges(reader, event, timeoutMs, account),
      changesBySource: (query, account) => listChangesBySource(reader, { ...query, account }, timeoutMs),
      failureGroups: (range, account) => listFailureGroups(reader, range, timeoutMs, account),
      // Sync jobs given up on, beside the handlers' failures; within a second, as the samples.
      syncFailures: (account) => withTimeout(listFailedJobs(deps.queues.syncQueue, { account }), SIDE_READ_MS, "failed sync jobs"),
      // The mirror's reads as GET /mirror answers them, and each listed record's bookkeeping.
      mirror: {
        ...mirrorReader,
        bookkeeping: (kind, ids, account) => readBookkeeping(reader, kind as MirrorKind, ids, timeoutMs, account),
      },
      summary,
      // The record pages and the JSON route share one reader.
      records: { ...records, find: (id, account) => findRecordKinds(reader, id, timeoutMs, account) },
      health: async (now) => {
        const [current, recent] = await Promise.all([summary(), samples(now)]);
        return { summary: current, samples: recent, limits };
      },
      // GET /accounts's list, with each sync's state; within a second, as the samples, so no page waits on it.
      accounts: () => withTimeout(deps.accounts.list(), SIDE_READ_MS, "accounts list"),
      openProblems: () => withTimeout(problemStore.list({ state: "open" }), SIDE_READ_MS, "open problems"),
    };
    mountConsole(root, { adminToken, sources, logger });
  };
}

/**
 * The operator's write API in this process (replays, bulk replays, refresh, reconcile, backfill):
 * one home for the HTTP API and the CLI's hand-over. A worker here counts the bulk replays' jobs.
 */
export function serviceOperatorActions(deps: {
  config: Config;
  logger: Logger;
  connection: RedisClient;
  storage: Storage;
  queues: OperatorQueues;
  worker: WorkerRole | undefined;
  /** The registered accounts (accounts.ts): whose sync an operator may ask for. */
  accounts: Pick<AccountRegistry, "list">;
}): OperatorActions {
  const { config, connection, worker } = deps;
  const prefix = config.queuePrefix;
  if (worker) trackBulkReplays(worker.eventWorker, connection, prefix);
  // "Refresh now" on a record page notes its id where the built-in handlers note the account's events' ids.
  const refreshOf = createRefreshRequests({ config, connection, syncQueue: deps.queues.syncQueue });
  return createOperatorActions({
    eventLog: deps.storage.eventLog,
    eventsQueue: deps.queues.eventsQueue,
    syncQueue: deps.queues.syncQueue,
    redis: connection,
    prefix,
    ...(worker ? { handlerKeys: (type: string) => worker.handlerKeys(type) } : {}),
    steps: deps.storage.steps,
    accountStores: (account) => deps.storage.forAccount(account),
    confirmAbove: config.bulkReplayConfirmAbove,
    syncAvailable: config.api !== undefined,
    refresh: (account) => refreshOf(account).queue,
    accountExists: async (account) => (await deps.accounts.list()).some((a) => a.id === account),
    logger: deps.logger,
  });
}

const text = (value: unknown) => (typeof value === "string" ? value : undefined);

/**
 * A record's story (operator reads) and its refresh: the restaurant and the read's hints come from
 * the story (the mirror's copy, else the newest event naming it), the request goes through the
 * operator actions to the refresh scheduler.
 */
function createRecordReader(of: (account: string | undefined) => Storage, actions: Pick<OperatorActions, "requestRefresh">): RecordReader {
  const story = (kind: string, id: string, cursor?: string, account?: string) => readStory(of(account), kind as MirrorKind, id, cursor);
  return {
    kinds: MIRROR_KINDS,
    story,
    async refresh(kind, id, account) {
      const found = await story(kind, id, undefined, account);
      if (!found?.restaurantId)
        throw new OperatorActionError(
          "record_not_found",
          `no restaurant is known for ${kind} ${id}: neither the mirror nor an event names it`,
        );
      const copy = found.record?.data;
      const note = { status: text(copy?.status), createdAt: text(copy?.createdAt), date: text(copy?.date) };
      await actions.requestRefresh(kind, found.restaurantId, id, note, account);
      return { kind, id, restaurantId: found.restaurantId };
    },
  };
}

/**
 * The accounts as the operator API serves them: the registry's calls, each change followed by a
 * reload of this process's directory (served or refused here at once; other processes follow
 * within a poll), lists with each account's sync state, and one account's health.
 */
export function serviceAccounts(deps: {
  config: Config;
  storage: Storage;
  connection: RedisClient;
  registry: AccountRegistry;
  directory: AccountDirectory;
  logger?: Pick<Logger, "warn">;
  /**
   * How a new key is tried before it is stored (add, and a rotation that changes it): by default
   * one page of one order through the upstream client, on the key's own budget. The seam where
   * the problems' outcome reporting joins (an unreachable API opens `upstream_unreachable`).
   */
  tryKey?: TryKey;
  /**
   * Told the facts this process meets: a key tried before an account is stored reports its call's
   * outcome with `upstreamOutcomeReporter(problems, null)` (problems/upstream-facts.ts).
   */
  problems?: ProblemTracker;
}): AccountsPort {
  const { config, storage, connection, registry, directory } = deps;
  const api = config.api;
  const tryKey: TryKey | undefined =
    deps.tryKey ??
    (api &&
      ((apiKey) =>
        tryApiKey(
          upstreamFromConfig({ ...api, apiKey }, connection, config.queuePrefix, {
            ...(deps.problems ? { onOutcome: upstreamOutcomeReporter(deps.problems, null) } : {}),
          }).api,
        )));
  const trying = tryKey ? { tryKey } : {};
  const withState = async (accounts: Awaited<ReturnType<AccountRegistry["list"]>>) =>
    withKeyRefused(storage.database.db, await withSyncState(storage.database.db, accounts));
  const thenReload = <R>(change: Promise<R>) => change.finally(() => directory.reload().catch(() => undefined));
  const keys = redisKeys(config.queuePrefix);
  /**
   * A purge's part in Redis: the account's sync keys (ids waiting for a refresh, the pace, the
   * lease) and its seen event ids. Nothing reads the seen ids of a registration gone (they are
   * keyed by incarnation); this frees them before their window ends.
   */
  const forgetInRedis = async (id: string) => {
    try {
      for (const pattern of [keys.syncOf(id).every, keys.ingest.seenOfAccount(id)]) await deleteMatching(connection, pattern);
    } catch (err) {
      deps.logger?.warn(
        { account: id, err: (err as Error).message },
        "a purged account's keys were not all deleted from Redis; its seen ids expire with the dedup window",
      );
    }
  };
  return {
    ...registry,
    list: async () => withState(await registry.list()),
    add: (input) => thenReload(registry.add(input, trying)),
    rotate: (id, input) => thenReload(registry.rotate(id, input, trying)),
    async remove(id, options) {
      await thenReload(registry.remove(id, options));
      if (options?.purge) await forgetInRedis(id);
    },
    async health(id) {
      const [account] = await withState((await registry.list()).filter((a) => a.id === id));
      if (!account) throw accountNotFound(id);
      const keys = directory.get(id);
      const budget =
        keys && config.api
          ? await upstreamFromConfig({ ...config.api, apiKey: keys.apiKey }, connection, config.queuePrefix).limiter.state()
          : undefined;
      const sync = redisKeys(config.queuePrefix).syncOf(id);
      const pending = await Promise.all(
        SYNCED_KINDS.map(async (kind) => [kind, await connection.hlen(sync.pendingRefresh(kind))] as const),
      );
      return {
        ...account,
        // Its key's budget now, shared by every process: calls in the window, by class, and a 429's pause.
        ...(budget
          ? { budget: { inWindow: budget.inWindow, max: budget.max, byClass: budget.byClass, pausedForMs: budget.pausedForMs } }
          : {}),
        // Ids its events asked to be read again, not read yet.
        pendingRefreshes: Object.fromEntries(pending),
      };
    },
  };
}
