import { Cluster, Redis, type ClusterOptions, type RedisOptions } from "ioredis";
import type { Logger } from "pino";
import { DEFAULT_ACCOUNT, DEFAULTS } from "../config/defaults.js";

/** One Redis or a Redis Cluster: both run our commands and scripts, and BullMQ takes either. */
export type RedisClient = Redis | Cluster;

export type ConnectionKind = "web" | "worker";

export interface RedisConnectionOptions {
  /** `url` names one seed node of a Redis Cluster; the client discovers the rest. @defaultValue false */
  cluster?: boolean;
}

/**
 * How long the service gives Redis to answer before it treats Redis as away: a connection's
 * connect, /readyz's check, the start's wait for its first connections, a one-off command's wait.
 * Long enough for a Redis across a network; short enough that a probe (within its own timeout) or
 * an operator hears "away" at once.
 */
export const REDIS_WAIT_MS = 2000;

/** The longest wait between two reconnect attempts (what an outage's log line says): its cadence, not a wait for an answer. */
const RECONNECT_MAX_MS = 2000;
// Reconnect forever with capped backoff; never give up (a null here would end the client).
const reconnectDelay = (times: number) => Math.min(50 * 2 ** Math.min(times, 6), RECONNECT_MAX_MS);

/**
 * Two kinds of connection, as BullMQ needs them (see shared/STACK-NOTES.md):
 * - "web" (the edge's enqueues): fails fast while Redis is away so the edge can answer 503 instead
 *   of hanging, and reconnects by itself forever so it recovers without a restart.
 * - "worker" (blocking fetches, the mirror, the limiter): `maxRetriesPerRequest: null` as BullMQ
 *   requires, no command timeout (it would break the blocking fetch loop).
 * With `cluster`, the same two behaviours on an ioredis Cluster: the offline queue and the
 * reconnect strategy are the cluster's, the per-request retries each node connection's.
 *
 * @example
 * const connection = createRedisConnection(config.redisUrl, "worker", { cluster: config.redisCluster });
 */
export function createRedisConnection(url: string, kind: ConnectionKind, options: RedisConnectionOptions = {}): RedisClient {
  const failFast = kind === "web";
  if (options.cluster) return new Cluster([seedOf(url)], clusterOptions(url, failFast));
  const common: RedisOptions = { connectTimeout: REDIS_WAIT_MS, retryStrategy: reconnectDelay };
  return new Redis(
    url,
    failFast
      ? { ...common, enableOfflineQueue: false, maxRetriesPerRequest: 1 }
      : { ...common, maxRetriesPerRequest: null, enableReadyCheck: true },
  );
}

function seedOf(url: string): { host: string; port: number } {
  const { hostname, port } = new URL(url);
  // URL keeps the brackets of an IPv6 host; the socket wants the bare address.
  return { host: hostname.replace(/^\[(.*)\]$/, "$1"), port: port ? Number(port) : 6379 };
}

function clusterOptions(url: string, failFast: boolean): ClusterOptions {
  const { username, password, protocol } = new URL(url);
  return {
    // Ready only once CLUSTER INFO says the cluster serves every slot.
    enableReadyCheck: true,
    // Web: a command while the cluster is unreachable fails at once (the edge answers 503).
    enableOfflineQueue: !failFast,
    // Called when no node answers: rediscover from the seed, forever.
    clusterRetryStrategy: reconnectDelay,
    // Passed to the connection to each node (credentials and TLS as the seed URL gives them).
    redisOptions: {
      connectTimeout: REDIS_WAIT_MS,
      maxRetriesPerRequest: failFast ? 1 : null,
      ...(username ? { username: decodeURIComponent(username) } : {}),
      ...(password ? { password: decodeURIComponent(password) } : {}),
      ...(protocol === "rediss:" ? { tls: {} } : {}),
    },
  };
}

/**
 * Builds our key names under `prefix` (QUEUE_PREFIX, the same one BullMQ uses).
 *
 * @example
 * const keys = redisKeys("{svc}");
 * keys.upstreamBudget(apiKeyId(key)).log // "{svc}:upstream:{3f2a…}:log"
 */
export function redisKeys(prefix: string = DEFAULTS.queuePrefix) {
  const ingest = `${prefix}:ingest:{ingest}`;
  return {
    prefix,
    /** The shared upstream rate budget of one API key id; one slot, tag `{keyId}` (the limiter's scripts). */
    upstreamBudget(keyId: string) {
      const base = `${prefix}:upstream:{${keyId}}`;
      return {
        log: `${base}:log`,
        pause: `${base}:pause`,
        next: `${base}:next`,
        activeLog: `${base}:log:active`,
        fullLog: `${base}:log:full`,
        lentLog: `${base}:log:lent`,
        webhookWaiters: `${base}:waiting:webhook`,
        activeWaiters: `${base}:waiting:active`,
      };
    },
    /**
     * One account's sync keys: `default`'s where they always were, a registered account's under
     * `{acct:<id>}`. Each script touches one key, so none needs another's slot. On a cluster the
     * prefix's own tag comes first and wins (Redis hashes the first `{…}`): every key stays in
     * the deployment's slot, as the budgets' do (docs/scaling.md).
     */
    syncOf(account: string = DEFAULT_ACCOUNT) {
      const base = account === DEFAULT_ACCOUNT ? `${prefix}:sync` : `${prefix}:sync:{acct:${account}}`;
      return {
        /** The ids of a kind waiting for a refresh, each with its version and what the events said (a hash). */
        pendingRefresh: (kind: string) => `${base}:pending-ids:${kind}`,
        /** Epoch ms before which no run of a kind's refresh starts (the budget's pace after a run), with a TTL. */
        refreshPace: (kind: string) => `${base}:refresh-pace:${kind}`,
        /** The trace contexts of the events that asked for a kind's next refresh (a list, trimmed, with a TTL). */
        refreshLinks: (kind: string) => `${base}:refresh-links:${kind}`,
        /** Who runs the account's active reconciliation pass now (a string: the holder's token, with a TTL). */
        activePassLease: `${base}:active-pass-lease`,
        /** A SCAN pattern for every key above (a purge deletes them; `*` and `?` do not occur in an account id). */
        every: `${base}:*`,
      };
    },
    /**
     * Set by the workers and never expired: a worker that finds it missing while PostgreSQL says the
     * service ran knows Redis lost its data (worker/worker-lifecycle.ts); its own slot.
     */
    workersAlive: `${prefix}:sync:workers-alive`,
    /** Held (SET NX with a TTL) by the one worker that restores an emptied Redis; its own slot. */
    restoringRedis: `${prefix}:sync:restoring`,
    /**
     * The ingest path (queue/ingest-stream.ts, queue/stream-consumer.ts): the stream the edge appends
     * verified events to and the workers read, and each event id's "seen" key. The edge's script
     * touches both, so they share the tag `{ingest}` (the prefix's own tag when it has one). The
     * consumer group is a name inside the stream, not a key. A registered account's ids are seen
     * apart from the default company's, and apart from the account's earlier registrations
     * (`seen@<account>#<incarnation>:`): event ids are unique within a company only, and an id
     * removed and added again may be another company. A removal's keys are never read again and
     * expire with the window (a purge deletes them sooner, `seenOfAccount`).
     */
    ingest: {
      stream: `${ingest}:events`,
      group: "pump",
      seen: (eventId: string, account?: string, incarnation?: string) =>
        account === undefined
          ? `${ingest}:seen:${eventId}`
          : `${ingest}:seen@${account}${incarnation === undefined ? "" : `#${incarnation}`}:${eventId}`,
      /** A SCAN pattern for every seen key of a registered account, any incarnation (`*`, `?`, `[` and `\\` do not occur in an account id). */
      seenOfAccount: (account: string) => `${ingest}:seen@${account}[#:]*`,
    },
    /** The operator API (worker/operator-actions.ts): a bulk replay's progress (a hash), an Idempotency-Key's answer. */
    operator: {
      bulkReplay: (id: string) => `${prefix}:operator:replay:${id}`,
      idempotency: (digest: string) => `${prefix}:operator:idempotency:${digest}`,
      // The last bulk replay started for one filter (its id): a second one waits until it ends.
      bulkReplayByFilter: (digest: string) => `${prefix}:operator:replay-by-filter:${digest}`,
    },
    /** The console's charts (metrics/minute-samples.ts): one point a minute per series, a hash of at most 120 fields; its own slot. */
    minuteSamples: `${prefix}:metrics:minute-samples`,
  };
}

/**
 * Every Redis key name of ours, built in one place (BullMQ builds its own queue keys under the same
 * prefix). See docs/redis.md for the layout.
 *
 * The hash-tag rule: every key one Lua script touches must hash to one Redis Cluster slot, so each
 * group of keys a script uses together carries the same `{tag}`. If the prefix carries a tag
 * itself (`{svc}`, as BullMQ needs on a cluster), it comes first and wins: then every key of a
 * deployment hashes to that one slot, which keeps each group together all the same.
 */
export type RedisKeys = ReturnType<typeof redisKeys>;

export interface ScriptDefinition {
  /** Omitted when it varies per call: the caller then passes the key count as the first argument. */
  numberOfKeys?: number;
  lua: string;
}

/**
 * Defines Lua scripts as commands of `redis` and returns it typed as `T`, which names them. ioredis
 * sends EVALSHA after the first call and falls back to EVAL when the script cache was flushed.
 * defineCommand is per connection: a script already defined there is left alone, so factories
 * sharing one connection may each call this.
 */
export function defineScripts<T>(redis: Redis | Cluster, scripts: Record<keyof T & string, ScriptDefinition>): T {
  for (const [name, definition] of Object.entries<ScriptDefinition>(scripts)) {
    if (!(name in redis)) redis.defineCommand(name, definition);
  }
  return redis as unknown as T;
}

/** Keys a deleteMatching call asks for and unlinks per round trip. */
const DELETE_BATCH = 500;

/**
 * Unlinks every key matching the SCAN `pattern`, in bounded batches (SCAN COUNT, then UNLINK of
 * what it found), on every master of a cluster; returns how many. Keys written meanwhile may be
 * missed: callers key what must never be read again apart (a new incarnation) and use this to
 * free memory sooner.
 */
export async function deleteMatching(redis: RedisClient, pattern: string): Promise<number> {
  const nodes: Redis[] = redis instanceof Cluster ? redis.nodes("master") : [redis];
  let deleted = 0;
  for (const node of nodes) {
    let cursor = "0";
    do {
      const [next, keys] = await node.scan(cursor, "MATCH", pattern, "COUNT", DELETE_BATCH);
      // One key a call on a cluster: keys of one SCAN page may lie in different slots.
      if (keys.length > 0) deleted += redis instanceof Cluster ? await unlinkEach(node, keys) : await node.unlink(...keys);
      cursor = next;
    } while (cursor !== "0");
  }
  return deleted;
}

async function unlinkEach(node: Redis, keys: string[]): Promise<number> {
  const pipeline = node.pipeline();
  for (const key of keys) pipeline.unlink(key);
  const replies = (await pipeline.exec()) ?? [];
  return replies.reduce((n, [, r]) => n + (typeof r === "number" ? r : 0), 0);
}

/** A Redis URL fit to print: scheme, host and port, the user kept and the password masked. */
export function printableRedisUrl(url: string): string {
  try {
    const { protocol, host, username, password } = new URL(url);
    const credentials = username || password ? `${username}${password ? ":***" : ""}@` : "";
    return `${protocol}//${credentials}${host}`;
  } catch {
    return "(REDIS_URL is not a URL)";
  }
}

/** How often a Redis that stays away is reported again. @defaultValue 10 s */
export const REDIS_OUTAGE_REPORT_MS = 10_000;

/**
 * Logs a connection's outage as a few lines instead of one per reconnect attempt (ioredis emits
 * `error` on each, every 2 s at most, so an unreachable Redis used to flood the log): one line
 * naming REDIS_URL when it starts, one per interval while it lasts, one when Redis is back.
 */
export function logRedisOutages(connection: RedisClient, options: { logger: Logger; url: string; kind: string }): void {
  const { logger, kind } = options;
  const redis = printableRedisUrl(options.url);
  let since: number | undefined;
  let lastLine = 0;
  let attempts = 0;
  connection.on("error", (err: Error & { code?: string }) => {
    attempts++;
    const now = Date.now();
    const reason = err.code ?? err.message;
    if (since === undefined) {
      since = lastLine = now;
      logger.warn(
        { redis, kind, err: reason },
        `Redis at ${redis} does not answer (${reason}): is it running, and is REDIS_URL set to it? Retrying every ${RECONNECT_MAX_MS / 1000} s`,
      );
    } else if (now - lastLine >= REDIS_OUTAGE_REPORT_MS) {
      lastLine = now;
      logger.warn(
        { redis, kind, err: reason, attempts, downSeconds: Math.round((now - since) / 1000) },
        `Redis at ${redis} still does not answer (REDIS_URL); retrying`,
      );
    }
  });
  connection.on("ready", () => {
    if (since === undefined) return;
    logger.info({ redis, kind, downSeconds: Math.round((Date.now() - since) / 1000) }, "Redis answers again");
    since = undefined;
    attempts = 0;
  });
}

/** Errors of the connection itself (Redis away, being reconnected): logRedisOutages reports those. */
const CONNECTION_ERROR = /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOTFOUND|EHOSTUNREACH|EPIPE|EAI_AGAIN)$/;
export function isRedisConnectionError(err: Error & { code?: string }): boolean {
  return CONNECTION_ERROR.test(err.code ?? "") || /^Connection is closed|^connect E[A-Z]+ /.test(err.message);
}

/**
 * The `error` listener of a queue or worker: a warning per error, except the connection's own
 * errors while Redis is away, which logRedisOutages already reports once per interval (each of
 * these emitters repeats them on every reconnect attempt: about 5 lines a second with no Redis).
 */
export function warnUnlessOutage(logger: Logger, what: string): (err: Error & { code?: string }) => void {
  return (err) => {
    if (!isRedisConnectionError(err)) logger.warn({ err: err.message }, what);
  };
}
