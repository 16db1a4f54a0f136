// The operator commands (replay, reconcile, migrate) and how a one-off command reaches
// the deployment the environment names: its Redis (a bounded wait), its database (migrated
// first; the running service's embedded server when it holds DATA_DIR), the operator actions on
// those stores, or a remote service's operator API (--url).
import { SingleBar } from "cli-progress";
import { type Config, configValue, loadConfig } from "../config/config.js";
import { SENT_EVENT_TYPES } from "../events/catalog.js";
import { handlerKeyType } from "../events/dispatch.js";
import { createLogger } from "../logging/logger.js";
import { embeddedDatabaseExists } from "../mirror/database.js";
import { type EventQuery, REPLAY_FILTER_FIELDS } from "../mirror/event-log.js";
import { printable } from "../base/text.js";
import { accountParam } from "../mirror/accounts.js";
import { accountQuery, carriedAccount, DEFAULTS } from "../config/defaults.js";
import { openStorage, type Storage } from "../mirror/storage.js";
import { createEventsQueue, createSyncQueue, EVENTS_QUEUE, SYNC_QUEUE } from "../queue/events-queue.js";
import { FAILED_JOBS_READ, listFailedJobs } from "../queue/failed-jobs.js";
import { createRedisConnection, type RedisClient, printableRedisUrl, REDIS_WAIT_MS } from "../redis/redis.js";
import * as z from "zod";
import { SERVED_BY } from "../http/errors.js";
import { BulkCount, BulkProgress, BulkStarted, ErrorBody, ReplayStarted, SyncQueued } from "../http/operator-schemas.js";
import { createOperatorActions, type OperatorActions } from "../worker/operator-actions.js";
import { OperatorActionError, type OperatorRefusal } from "../worker/errors.js";
import {
  BULK_REPLAY_TTL_SECONDS,
  type BulkReplayProgress,
  removeReplayedFailedJobs,
  replayEvents,
  replayQueryFromFilter,
} from "../worker/replays.js";
import {
  type Answer,
  answer,
  type Command,
  CommandError,
  causeCode,
  didYouMean,
  flagOptions,
  type Output,
  parseFlags,
  plural,
  UsageError,
} from "./command.js";

const replayHelp = `svc-webhooks replay --id <event-id> [--handler <key>] [--account <id>]
svc-webhooks replay [--since <date>] [--until <date>] [--type <type|family.*>]
                    [--status received|retrying|handled|failed] [--handler <key>] [--fresh]
                    [--account <id>] [--dry-run | --confirm]
svc-webhooks replay list [--account <id>] | <job-id> | all [--queue ${EVENTS_QUEUE}|${SYNC_QUEUE}]
svc-webhooks replay status <bulk-id> | cancel <bulk-id> [--url <url>]

Replays act on the deployment the environment names: its event log (DATABASE_URL, or the
embedded database under DATA_DIR, which must exist; when a running service holds it, \`npm run
dev\` or \`npm start\`, through that service's server) and its Redis (REDIS_URL, QUEUE_PREFIX).
A replay removes the replayed events' failed jobs, so an old dead letter cannot run a handler once more.
  --id              replay this one event (all its handlers, or --handler's); asked again while
                    the first replay still waits, it queues nothing more
  --account         the event (with --id) or the events (by filter) of this registered account
                    (docs/accounts.md); without it, the default company's
  --url             a remote service's operator API instead (with ADMIN_TOKEN)

By filter (no positional argument): queues every logged event that matches again, as a
deliberate redelivery (it bypasses the deduplication window), and says how many it queued.
  --since, --until  received at or after / before (ISO 8601: 2026-11-23 or 2026-11-23T10:00:00Z)
  --type            an event type (order.created) or a family (order.*)
  --status          the event's status in the log (failed: its last attempt failed for good;
                    retrying: its last attempt failed and it will be tried again)
  --handler         only events on which this handler key failed, and run only that handler
                    (keys as in the log and in GET /events, e.g. user:order.created)
  --fresh           run the events' durable steps (ctx.step) again instead of returning their
                    stored results (with --handler: only that handler's steps)
  --dry-run         count (and, on stores opened here, list) what would be queued; queue nothing
  --confirm         go ahead although more events match than BULK_REPLAY_CONFIRM_ABOVE (${DEFAULTS.bulkReplayConfirmAbove} by
                    default); without it such a replay is refused, naming how many match

A bulk replay (the id a replay by filter answers, bulk-…; kept ${BULK_REPLAY_TTL_SECONDS / 86_400} days), in Redis (REDIS_URL) or at --url:
  status     how many of its events ended handled, failed, or were taken off the queue
  cancel     stops it: nothing more is queued, and its queued jobs no worker started are taken
             off the queue (the ones running end as they would); a replay that ended stays so

Failed BullMQ jobs (kept for KEEP_FAILED_SECONDS), always straight from Redis (REDIS_URL):
  list       prints the failed jobs, newest first: id, event type or sync job, event id or kind,
             account, attempts, when it failed, reason (--account: only that account's)
  <job-id>   moves that failed job back to the queue
  all        moves every failed job back
  --queue    ${EVENTS_QUEUE} (default) or ${SYNC_QUEUE}`;

/** A bulk replay's answer: how many events it queued and its id, or (a dry run) how many it would. */
const BulkAnswer = z.union([BulkStarted, BulkCount]);
type BulkAnswer = z.infer<typeof BulkAnswer>;

/** The flags that select events of the log to replay (a filter): the replay's filters but `fingerprint`, which only a failure group names. */
const FILTER_FLAGS = REPLAY_FILTER_FIELDS.filter((f) => f !== "fingerprint");

const replayFlags = {
  queue: { type: "string", default: EVENTS_QUEUE },
  ...flagOptions(["id", "url", ...FILTER_FLAGS, "account"], ["dry-run", "fresh", "confirm"]),
} as const;

/** The flags of a replay, as parseFlags reads them. */
type Flags = ReturnType<typeof parseFlags<{ options: typeof replayFlags }>>["values"];

async function runReplay(argv: string[], env: NodeJS.ProcessEnv, stop: AbortSignal, out: Output): Promise<Answer> {
  const { values, positionals } = parseFlags({ args: argv, options: replayFlags, allowPositionals: true, strict: true });
  const config = loadConfig({ ...env, ROLE: "worker" });
  const remote = values.url === undefined ? undefined : operatorClient(values.url, env);
  if (values.id !== undefined) {
    if (positionals.length > 0) throw new UsageError("--id replays one event; no list, <job-id> or all with it");
    const others = [...FILTER_FLAGS.filter((f) => f !== "handler"), "dry-run", "fresh", "confirm"] as const;
    const given = others.filter((f) => values[f] !== undefined && values[f] !== false);
    if (given.length > 0) throw new UsageError(`--id takes only --handler, --account and --url; not --${given.join(", --")}`);
    return replayOne(config, values.id, values, remote);
  }
  if (positionals.length === 0) return replayMatching(config, values, remote, stop, out);
  const [what, ...extra] = positionals;
  if (values.account !== undefined && what !== "list")
    throw new UsageError("--account goes with --id, a filter or list: <job-id>, all and a bulk replay's id name no account");
  if ((what === "status" || what === "cancel") && extra.length === 1 && extra[0]) return bulkReplay(config, what, extra[0], remote);
  if (remote) throw new UsageError("--url goes with --id, a filter, or status/cancel <bulk-id>; list, <job-id> and all read Redis");
  if (!what || extra.length > 0)
    throw new UsageError(`replay takes one of: list, <job-id>, all — or filters for the event log\n\n${replayHelp}`);
  if (values.fresh || values.confirm)
    throw new UsageError(`--${values.fresh ? "fresh" : "confirm"} applies to replays from the event log (no list, <job-id> or all)`);
  const queueName = [EVENTS_QUEUE, SYNC_QUEUE].find((name) => name === values.queue);
  if (!queueName) throw new UsageError(`--queue must be ${EVENTS_QUEUE} or ${SYNC_QUEUE}, not "${values.queue}"`);
  return replayFailedJobs(config, queueName, what, values.account === undefined ? undefined : accountParam(values.account));
}

/** A bulk replay's progress (GET /events/replays/{id}), or its cancel (DELETE): at --url, else in Redis. */
async function bulkReplay(config: Config, what: "status" | "cancel", id: string, remote: OperatorClient | undefined): Promise<Answer> {
  const path = `/events/replays/${encodeURIComponent(id)}`;
  const progress: BulkReplayProgress = remote
    ? await remote.call(what === "status" ? "GET" : "DELETE", path, BulkProgress)
    : await withDirectActions(config, undefined, (actions) =>
        what === "status" ? actions.bulkProgress(id) : actions.cancelBulkReplay(id),
      );
  const { total, done, failed, withdrawn, state } = progress;
  const ended = `${done} handled, ${failed} failed${withdrawn > 0 ? `, ${withdrawn} taken off the queue unrun` : ""}`;
  return answer(
    progress,
    state === "running"
      ? `bulk replay ${printable(progress.id)} is running: ${done + failed + withdrawn} of ${plural(total, "event")} ended (${ended})`
      : `bulk replay ${printable(progress.id)} is ${state}: of ${plural(total, "event")}, ${ended}`,
  );
}

/** One event by id: at --url, else on the stores the environment names. */
async function replayOne(config: Config, id: string, { handler, account }: Flags, remote: OperatorClient | undefined): Promise<Answer> {
  const options = { ...(handler ? { handler } : {}), ...(account ? { account } : {}) };
  const result: z.infer<typeof ReplayStarted> = remote
    ? await remote.call(
        "POST",
        `/events/${encodeURIComponent(id)}/replay${accountQuery(account)}`,
        ReplayStarted,
        handler ? { handler } : {},
      )
    : await withDirectActions(config, await openEventStores(config), (actions) => actions.replayEvent(id, options));
  const { handlers } = result.replay;
  return answer(
    result,
    `event ${printable(result.event)} queued for replay as job ${printable(result.replay.id)}, running ${handlers.length > 0 ? handlers.map(printable).join(", ") : "no handler"}`,
  );
}

/** Every event matching the flags: at --url (a bulk replay there), else from the log here. */
async function replayMatching(config: Config, flags: Flags, remote: OperatorClient | undefined, stop: AbortSignal, out: Output) {
  const filter: Record<string, string> = {};
  for (const name of FILTER_FLAGS) if (flags[name] !== undefined) filter[name] = flags[name];
  if (Object.keys(filter).length === 0 && !flags["dry-run"])
    throw new UsageError(
      `replay with no filter would send every event of the log again: name one (${FILTER_FLAGS.map((f) => `--${f}`).join(", ")}), or count them with --dry-run`,
    );
  let query;
  try {
    query = replayQueryFromFilter(filter);
  } catch (err) {
    throw new UsageError((err as Error).message.replace(/handlerStatus/g, "--handler"));
  }
  // Every event is asked for by name, never by an empty filter.
  const scope = Object.keys(filter).length > 0 ? { filter } : { all: true };
  const options = { ...(flags["dry-run"] ? { dryRun: true } : {}), ...(flags.fresh ? { fresh: true } : {}) };
  const account = accountParam(flags.account);
  const own = carriedAccount(account);
  if (remote) {
    const path = `/events/replay${accountQuery(own)}`;
    const ask = (extra: { dryRun?: true; confirm?: number }) => remote.call("POST", path, BulkAnswer, { ...scope, ...options, ...extra });
    const bulk = flags["dry-run"] ? await ask({}) : await startBulkReplay(ask, flags.confirm === true);
    return matched(flags, bulk.count, "id" in bulk && typeof bulk.id === "string" ? bulk.id : undefined);
  }
  const storage = await openEventStores(config);
  // The account's part of the log and its steps (the default company's without --account).
  const stores = storage.forAccount(account);
  if (!flags["dry-run"] && !flags.confirm)
    await refuseAboveCap(stores, query, config.bulkReplayConfirmAbove).catch(async (err: unknown) => {
      await storage.close();
      throw err;
    });
  const direct = flags["dry-run"] ? undefined : await directOperatorActions(config, storage);
  const queue = direct?.eventsQueue;
  const bar = process.stderr.isTTY ? new SingleBar({ format: "replaying {bar} {value} events", stream: process.stderr }) : undefined;
  bar?.start(0, 0);
  let queued: number;
  try {
    queued = await replayEvents(
      { eventLog: stores.eventLog, queue },
      {
        query,
        handler: flags.handler,
        dryRun: flags["dry-run"],
        fresh: flags.fresh ? stores.steps : undefined,
        ...(own === undefined ? {} : { account: own }),
        ...(queue ? { removeFailedJobs: (ids: readonly string[]) => removeReplayedFailedJobs(queue, ids, own) } : {}),
        onProgress: (n, page) => {
          if (flags["dry-run"])
            for (const event of page)
              out.line([printable(event.id), printable(event.type), event.status, event.receivedAt.toISOString()].join("\t"));
          bar?.setTotal(n);
          bar?.update(n);
        },
      },
    );
  } finally {
    bar?.stop();
    if (direct) await direct.close();
    else await storage.close();
  }
  return matched(flags, queued);
}

/** A replay by filter's answer: how many events it queued (or would), and the bulk replay's id at a service. */
function matched(flags: Flags, count: number, bulk?: string): Answer {
  if (count === 0) warnUnsentNames(flags);
  if (flags["dry-run"]) return answer({ wouldQueue: count }, `${plural(count, "event")} would be replayed`);
  const following = bulk ? ` (bulk replay ${bulk}: replay status ${bulk} follows it)` : "";
  return answer({ queued: count, bulk }, `${plural(count, "event")} queued for replay${following}`);
}

/**
 * When a replay matched nothing, a warning line on stderr for a --type or --handler that names a
 * type nobody sends (SENT_EVENT_TYPES): `order.craeted` matches nothing because it is a typo, and
 * "0 events" alone does not say so. The log may still hold such events from before; then they matched.
 */
function warnUnsentNames(flags: Flags): void {
  const sent = (type: string) =>
    type === "*" || (type.endsWith(".*") ? SENT_EVENT_TYPES.some((t) => t.startsWith(type.slice(0, -1))) : SENT_EVENT_TYPES.includes(type));
  const families = [...new Set(SENT_EVENT_TYPES.map((t) => `${t.split(".")[0]}.*`))];
  if (flags.type !== undefined && !sent(flags.type))
    console.error(
      `warning: nobody sends events of type ${printable(flags.type)} to this service${didYouMean(flags.type, [...SENT_EVENT_TYPES, ...families])}`,
    );
  const handlerType = flags.handler === undefined ? undefined : handlerKeyType(flags.handler);
  if (flags.handler !== undefined && (handlerType === undefined || !sent(handlerType)))
    console.error(
      handlerType === undefined
        ? `warning: ${printable(flags.handler)} is no handler key (<source>:<type>, e.g. user:order.created; GET /events shows them)`
        : `warning: handler ${printable(flags.handler)} is for type ${printable(handlerType)}, which nobody sends to this service${didYouMean(handlerType, SENT_EVENT_TYPES)}`,
    );
}

/** The service's refusal of a bulk replay it was not asked to confirm, or confirmed with another count. */
const UNCONFIRMED: OperatorRefusal = "confirm_required";

/** The refusal of a replay of more events than BULK_REPLAY_CONFIRM_ABOVE (`cap`, when it is this process's own) without --confirm. */
const tooManyToReplay = (count: number, cap?: number) =>
  new CommandError(
    `${count} events match, more than ${cap === undefined ? "the service's BULK_REPLAY_CONFIRM_ABOVE" : `BULK_REPLAY_CONFIRM_ABOVE (${cap})`} allows without confirmation: add --confirm to replay them`,
    UNCONFIRMED,
  );

/** Counted before anything is queued, as the operator API counts a bulk replay: above the cap it needs --confirm. */
async function refuseAboveCap(storage: Pick<Storage, "eventLog">, query: EventQuery, cap: number): Promise<void> {
  const count = await replayEvents({ eventLog: storage.eventLog, queue: undefined }, { query, dryRun: true });
  if (count > cap) throw tooManyToReplay(count, cap);
}

const refusedUnconfirmed = (err: unknown) => err instanceof CommandError && err.refusal === UNCONFIRMED;

/**
 * Starts a bulk replay in a service (at --url, or the one holding the store), whose cap is its own:
 * without --confirm a refusal is told as the count and the flag to add; with it, the count of a dry
 * run is sent as the confirmation (counted again when events arrived in between).
 */
async function startBulkReplay(ask: (extra: { dryRun?: true; confirm?: number }) => Promise<BulkAnswer>, confirm: boolean) {
  if (!confirm) {
    try {
      return await ask({});
    } catch (err) {
      if (!refusedUnconfirmed(err)) throw err;
      throw tooManyToReplay((await ask({ dryRun: true })).count);
    }
  }
  for (let tries = 1; ; tries++) {
    const { count } = await ask({ dryRun: true });
    try {
      return await ask({ confirm: count });
    } catch (err) {
      if (!refusedUnconfirmed(err) || tries === 3) throw err;
    }
  }
}

async function replayFailedJobs(config: Config, queueName: string, what: string, account: string | undefined): Promise<Answer> {
  const connection = await openCliRedis(config);
  const queue = queueName === SYNC_QUEUE ? createSyncQueue({ connection, config }) : createEventsQueue({ connection, config });
  try {
    if (what === "list") {
      const { jobs, more } = await listFailedJobs(queue, { account });
      const whose = account === undefined ? "" : ` of account ${printable(account)}`;
      console.error(`${plural(jobs.length, "failed job")}${whose} in ${queueName}${more ? ` (among the newest ${FAILED_JOBS_READ})` : ""}`);
      // For people a line per job (the count above is on stderr): no line when there is none. The
      // reason is printable already (failedJobOf).
      const lines = jobs.map((j) =>
        [
          ...[j.job, j.name, j.event ?? j.kind ?? "-", `account=${j.account}`].map(printable),
          `attempts=${j.attempts}`,
          j.failedAt ? j.failedAt.toISOString() : "-",
          j.reason,
        ].join("\t"),
      );
      return answer(jobs, lines.join("\n"));
    } else if (what === "all") {
      const total = await queue.getFailedCount();
      let done = 0;
      while (done < total) {
        const batch = await queue.getFailed(0, 99);
        if (batch.length === 0) break;
        for (const job of batch) await job.retry("failed");
        done += batch.length;
      }
      return answer(
        { replayed: done, failed: total, queue: queueName },
        `replayed ${done} of ${plural(total, "failed job")} of ${queueName}`,
      );
    } else {
      const job = await queue.getJob(what);
      if (!job) throw new UsageError(`no job ${what} in ${queueName}`);
      if (!(await job.isFailed())) throw new UsageError(`job ${what} is ${await job.getState()}, not failed`);
      await job.retry("failed");
      return answer({ job: what, queue: queueName }, `job ${printable(what)} moved back to ${queueName}`);
    }
  } finally {
    await queue.close();
    await closeCliRedis(connection);
  }
}

export const replay: Command = { help: replayHelp, answers: true, run: runReplay };

const reconcileHelp = `svc-webhooks reconcile [--url <url>]

Asks the workers for an active reconciliation pass now (what can still change read through the
API, within the shared rate budget; what webhooks missed becomes change events) and prints the
sync-queue job and when it runs: "reconciliation queued as job 208; it runs now", or "after the
running pass" when a pass runs already (it is queued behind it, not dropped). Asked again while that job waits or
runs, it answers the same job. The job goes into the deployment's Redis (REDIS_URL, QUEUE_PREFIX)
for its workers; with --url, through that service's operator API instead (with ADMIN_TOKEN).
  --json   print the answer as the API gives it: {"job":"<id>","runs":"now"}`;

async function runReconcile(argv: string[], env: NodeJS.ProcessEnv): Promise<Answer> {
  const { values } = parseFlags({ args: argv, options: { url: { type: "string" } }, strict: true });
  const asked: z.infer<typeof SyncQueued> =
    values.url !== undefined
      ? await operatorClient(values.url, env).call("POST", "/sync/reconcile", SyncQueued, {})
      : await withDirectActions(loadConfig({ ...env, ROLE: "worker" }), undefined, (actions) => actions.requestSync("reconcile"));
  return answer(asked, `reconciliation queued as job ${printable(asked.job)}; it runs ${asked.runs ?? "when a worker takes it"}`);
}

export const reconcile: Command = { help: reconcileHelp, answers: true, run: runReconcile };

const migrateHelp = `svc-webhooks migrate

Applies every pending database migration (DATABASE_URL, else the embedded database under
DATA_DIR), under the migration lock, and prints the names it applied. The service also migrates
at start; run this before a deploy to see the change apart.`;

async function runMigrate(argv: string[], env: NodeJS.ProcessEnv): Promise<Answer> {
  parseFlags({ args: argv, options: {}, strict: true });
  const config = loadConfig({ ...env, ROLE: "worker" });
  const storage = await openStorage(config.database);
  try {
    const applied = await storage.migrate();
    const { schema } = config.database;
    return answer(
      { applied, schema },
      applied.length === 0
        ? `no migration pending; schema ${schema} is up to date`
        : `applied ${plural(applied.length, "migration")} to schema ${schema}: ${applied.join(", ")}`,
    );
  } finally {
    await storage.close();
  }
}

export const migrate: Command = { help: migrateHelp, answers: true, run: runMigrate };

/**
 * A worker connection for a one-off command, once Redis answered: its errors never reach the
 * terminal as traces, and a Redis that does not answer within 2 s ends the command with one line.
 */
export async function openCliRedis(
  config: Pick<Config, "redisUrl" | "redisCluster">,
  /** Closed when Redis does not answer: the store the command opened first. */
  opened?: Pick<Storage, "close">,
): Promise<RedisClient> {
  const connection = createRedisConnection(config.redisUrl, "worker", { cluster: config.redisCluster });
  let lastError = "";
  connection.on("error", (err: Error) => (lastError = (err as Error & { code?: string }).code ?? err.message));
  if (!(await readyWithin(connection))) {
    connection.disconnect();
    await opened?.close();
    throw new CommandError(
      `Redis at ${printableRedisUrl(config.redisUrl)} does not answer${lastError ? ` (${lastError})` : ""}; set REDIS_URL (\`svc-webhooks dev\` prints its own)`,
    );
  }
  return connection;
}

/** Whether `connection` is ready, or becomes so within REDIS_WAIT_MS: a command never waits long for a Redis that is away. */
export function readyWithin(connection: RedisClient): Promise<boolean> {
  if (connection.status === "ready") return Promise.resolve(true);
  return new Promise<boolean>((resolve) => {
    const onReady = () => {
      clearTimeout(timer);
      resolve(true);
    };
    const timer = setTimeout(() => {
      connection.off("ready", onReady);
      resolve(false);
    }, REDIS_WAIT_MS);
    connection.once("ready", onReady);
  });
}

/** Closes a command's Redis connection. QUIT waits for a Redis that is away: only a ready connection is asked. */
export async function closeCliRedis(connection: RedisClient): Promise<void> {
  if (connection.status === "ready") await connection.quit().catch(() => undefined);
  connection.disconnect();
}

/** The database a one-off command works on, migrated first (commands may run before any server did). */
export async function openMigratedStorage(config: Config, options: Parameters<typeof openStorage>[1] = {}): Promise<Storage> {
  const storage = await openStorage(config.database, options);
  try {
    await storage.migrate();
    return storage;
  } catch (err) {
    await storage.close();
    throw err;
  }
}

/**
 * The event log of the deployment the config names, opened here: DATABASE_URL, else the embedded
 * database under DATA_DIR, through the running service's server when one holds it. An embedded
 * one must exist already (a replay of a log that was never written would create a database only
 * to find nothing in it).
 */
export async function openEventStores(config: Config): Promise<Storage> {
  if (!embeddedDatabaseExists(config.database))
    throw new CommandError(
      `no embedded database in DATA_DIR ${config.database.dataDir} (nothing was created): set DATA_DIR to the service's, or DATABASE_URL to its PostgreSQL`,
    );
  return openMigratedStorage(config, { attach: true });
}

/**
 * The operator actions on the stores themselves: Redis (bounded wait) and, when given, the
 * database the command opened (openEventStores). `close` releases all of it, `storage` too.
 */
async function directOperatorActions(config: Config, storage: Storage | undefined) {
  const connection = await openCliRedis(config, storage);
  const eventsQueue = createEventsQueue({ connection, config });
  const syncQueue = createSyncQueue({ connection, config });
  const noEventLog = () => Promise.reject(new Error("no event log opened"));
  const actions = createOperatorActions({
    eventLog: storage?.eventLog ?? { get: noEventLog, query: noEventLog },
    eventsQueue,
    syncQueue,
    redis: connection,
    prefix: config.queuePrefix,
    ...(storage ? { steps: storage.steps, accountStores: (account: string) => storage.forAccount(account) } : {}),
    syncAvailable: config.api !== undefined,
    // Nothing here logs in a one-off command (bulk replays run in the foreground through replayEvents).
    logger: createLogger({ level: "silent" }),
  });
  return {
    actions,
    eventsQueue,
    async close() {
      await Promise.all([eventsQueue.close(), syncQueue.close()]);
      await closeCliRedis(connection);
      await storage?.close();
    },
  };
}

/**
 * Runs `work` on the operator actions of the stores (directOperatorActions) and closes them after:
 * a refusal (no such event, a bad filter, a sweep already asked for) is one line in its own words.
 */
export async function withDirectActions<T>(config: Config, storage: Storage | undefined, work: (actions: OperatorActions) => Promise<T>) {
  const direct = await directOperatorActions(config, storage);
  try {
    return await work(direct.actions);
  } catch (err) {
    // A refusal (an OperatorActionError, or a filter the event log refused) in its own code and words.
    const code = (err as { code?: unknown }).code;
    if (err instanceof OperatorActionError || code === "invalid_filter")
      throw new CommandError(`${String(code)}: ${(err as Error).message}`, String(code));
    throw err;
  } finally {
    await direct.close();
  }
}

/** How long one request may take in all (a bulk dry run counts the whole log). */
const REQUEST_TIMEOUT_MS = 60_000;

export type OperatorClient = ReturnType<typeof operatorClient>;

/** The operator API's base URL as --url gives it, checked. */
export function operatorUrl(flag: string): string {
  if (!URL.canParse(flag) || !/^https?:$/.test(new URL(flag).protocol)) throw new UsageError(`--url "${flag}" is not an http(s) URL`);
  return flag.replace(/\/+$/, "");
}

/**
 * The operator API of the service at --url (a remote deployment, checked by operatorUrl), called
 * with ADMIN_TOKEN. Each call names the answer's schema (http/operator-schemas.ts, the shapes the
 * API's document is made of): the answer is parsed with it and typed by it.
 */
export function operatorClient(flag: string, env: NodeJS.ProcessEnv) {
  const url = operatorUrl(flag);
  // The one place the CLI reads ADMIN_TOKEN: every command's --url client is made here.
  const token = configValue(env, "ADMIN_TOKEN");
  if (!token) throw new CommandError(`--url calls the service's operator API: set ADMIN_TOKEN to its admin token`);
  return {
    url,
    /** One call of the operator API; its JSON answer as `answer` reads it, or a CommandError with the service's own words. */
    async call<A extends z.ZodType>(method: "GET" | "POST" | "DELETE", path: string, answer: A, body?: unknown): Promise<z.infer<A>> {
      let res: Response;
      try {
        res = await fetch(`${url}${path}`, {
          method,
          headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
      } catch (err) {
        throw new CommandError(`${method} ${url}${path} failed (${causeCode(err) ?? (err as Error).name}); check --url`);
      }
      const text = await res.text();
      // Another service's "404 not_found" must not read as this one's refusal.
      if (res.headers.get(SERVED_BY.header) !== SERVED_BY.value)
        throw new CommandError(`${url} is not an svc-webhooks service (${method} ${path} answered ${res.status}); check --url`);
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        throw new CommandError(`${url} answered ${res.status} without JSON; check --url`);
      }
      if (res.ok) return answered(answer, json, `${method} ${path}`);
      const error = ErrorBody.safeParse(json).data?.error;
      if (res.status === 401) throw new CommandError(`${url} refused ADMIN_TOKEN (401): use the service's admin token`);
      if (res.status === 404 && error?.code === "not_found" && error.message.startsWith("no route"))
        throw new CommandError(`${url} has no operator API (${path}): set ADMIN_TOKEN on the service`);
      throw new CommandError(`${error?.code ?? `HTTP ${res.status}`}: ${error?.message ?? text.slice(0, 200)}`, error?.code);
    },
  };
}

/**
 * A service's answer checked with its schema and typed by it, kept whole (a newer service's extra
 * fields reach --json); one that does not fit (another version of the service) is one line naming
 * the call and the first field at fault, never a half-read answer.
 */
function answered<A extends z.ZodType>(schema: A, json: unknown, call: string): z.infer<A> {
  const parsed = schema.safeParse(json);
  if (parsed.success) return json as z.infer<A>;
  const issue = parsed.error.issues[0];
  const where = issue && issue.path.length > 0 ? issue.path.join(".") : "the answer";
  throw new CommandError(
    `${call} answered unlike this CLI's operator API (${where}: ${issue?.message ?? "invalid"}); is the service another version?`,
  );
}
