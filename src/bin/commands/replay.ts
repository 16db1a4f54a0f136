import { parseArgs } from "node:util";
import { SingleBar } from "cli-progress";
import { type Config, loadConfig } from "../../config/config.js";
import { EVENTS_QUEUE, SYNC_QUEUE, createEventsQueue, createSyncQueue } from "../../queue/events-queue.js";
import type { EventQuery } from "../../mirror/event-log.js";
import type { Storage } from "../../mirror/storage.js";
import { OperatorActionError } from "../../worker/errors.js";
import { replayEvents, replayQueryFromFilter } from "../../worker/replays.js";
import { removeReplayedFailedJobs } from "../../worker/replays.js";
import { openCliRedis } from "../cli-redis.js";
import { CommandError } from "../command-error.js";
import { directOperatorActions } from "../direct-operator-actions.js";
import { HELD_BY_SERVICE, openEventStores } from "../event-stores.js";
import { operatorClient, operatorUrl, type OperatorClient } from "../operator-client.js";
import { askService } from "../service-handover.js";
import { printable } from "../../mirror/values.js";
import { UsageError } from "../usage-error.js";

export const help = `svc-webhooks replay --id <event-id> [--handler <key>]
svc-webhooks replay [--since <date>] [--until <date>] [--type <type|family.*>]
                    [--status received|retrying|handled|failed] [--handler <key>] [--fresh]
                    [--dry-run | --confirm]
svc-webhooks replay list | <job-id> | all [--queue events|sync]

Replays act on the deployment the environment names: its event log (DATABASE_URL, or the
embedded database under DATA_DIR, which must exist) and its Redis (REDIS_URL, QUEUE_PREFIX).
When a running service holds the embedded database (\`npm run dev\`, \`npm start\`), the replay
is handed to that service's worker through Redis and its answer printed. A replay removes the
replayed events' failed jobs, so an old dead letter cannot run a handler once more.
  --id              replay this one event (all its handlers, or --handler's); asked again while
                    the first replay still waits, it queues nothing more
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
  --confirm         go ahead although more events match than BULK_REPLAY_CONFIRM_ABOVE (1000 by
                    default); without it such a replay is refused, naming how many match

Failed BullMQ jobs (kept for KEEP_FAILED_SECONDS), always straight from Redis (REDIS_URL):
  list       prints the failed jobs: id, event type, event id, attempts, reason
  <job-id>   moves that failed job back to the queue
  all        moves every failed job back
  --queue    events (default) or sync`;

interface BulkAnswer {
  id?: string;
  count: number;
}

interface Flags {
  since?: string;
  until?: string;
  type?: string;
  status?: string;
  handler?: string;
  "dry-run": boolean;
  fresh: boolean;
  confirm: boolean;
}

export async function run(argv: string[], env: NodeJS.ProcessEnv, stop: AbortSignal): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      queue: { type: "string", default: "events" },
      id: { type: "string" },
      url: { type: "string" },
      since: { type: "string" },
      until: { type: "string" },
      type: { type: "string" },
      status: { type: "string" },
      handler: { type: "string" },
      "dry-run": { type: "boolean", default: false },
      fresh: { type: "boolean", default: false },
      confirm: { type: "boolean", default: false },
    },
    allowPositionals: true,
    strict: true,
  });
  const config = loadConfig({ ...env, ROLE: "worker" });
  const remote = values.url === undefined ? undefined : operatorClient(operatorUrl(values.url), env.ADMIN_TOKEN);
  if (values.id !== undefined) {
    if (positionals.length > 0) throw new UsageError("--id replays one event; no list, <job-id> or all with it");
    const others = (["since", "until", "type", "status", "dry-run", "fresh", "confirm"] as const).filter(
      (f) => values[f] !== undefined && values[f] !== false,
    );
    if (others.length > 0) throw new UsageError(`--id takes only --handler and --url; not --${others.join(", --")}`);
    return replayOne(config, values.id, values.handler, remote, stop);
  }
  if (positionals.length === 0) return replayMatching(config, values, remote, stop);
  const [what, ...extra] = positionals;
  if (!what || extra.length > 0) throw new UsageError(`replay takes one of: list, <job-id>, all — or filters for the event log\n\n${help}`);
  if (values.fresh || values.confirm)
    throw new UsageError(`--${values.fresh ? "fresh" : "confirm"} applies to replays from the event log (no list, <job-id> or all)`);
  const queueName = values.queue === "sync" ? SYNC_QUEUE : values.queue === "events" ? EVENTS_QUEUE : undefined;
  if (!queueName) throw new UsageError(`--queue must be events or sync, not "${values.queue}"`);
  return replayFailedJobs(config, queueName, what);
}

/** One event by id: at --url, else on the stores, else through the service that holds them. */
async function replayOne(
  config: Config,
  id: string,
  handler: string | undefined,
  remote: OperatorClient | undefined,
  stop: AbortSignal,
): Promise<void> {
  if (remote) {
    const answer = await remote.call("POST", `/events/${encodeURIComponent(id)}/replay`, handler ? { handler } : {});
    console.log(JSON.stringify(answer));
    return;
  }
  const stores = await openEventStores(config);
  if (stores === HELD_BY_SERVICE) {
    console.log(JSON.stringify(await askService(config, { action: "replayEvent", id, ...(handler ? { handler } : {}) }, { signal: stop })));
    return;
  }
  const direct = await directOperatorActions(config, stores);
  try {
    console.log(JSON.stringify(await direct.actions.replayEvent(id, handler ? { handler } : {})));
  } catch (err) {
    if (err instanceof OperatorActionError || (err as { code?: unknown }).code === "invalid_filter")
      throw new CommandError(`${(err as { code: string }).code}: ${(err as Error).message}`);
    throw err;
  } finally {
    await direct.close();
  }
}

/** Every event matching the flags: at --url or in the service that holds the stores (a bulk replay there), else from the log here. */
async function replayMatching(config: Config, flags: Flags, remote: OperatorClient | undefined, stop: AbortSignal): Promise<void> {
  const filter: Record<string, string> = {};
  for (const name of ["since", "until", "type", "status", "handler"] as const) if (flags[name] !== undefined) filter[name] = flags[name];
  if (Object.keys(filter).length === 0 && !flags["dry-run"])
    throw new UsageError(
      "replay with no filter would send every event of the log again: name one (--since, --until, --type, --status, --handler), or count them with --dry-run",
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
  const stores = remote ? undefined : await openEventStores(config);
  if (stores === undefined || stores === HELD_BY_SERVICE) {
    const ask = (extra: { dryRun?: true; confirm?: number }) =>
      remote
        ? remote.call<BulkAnswer>("POST", "/events/replay", { ...scope, ...options, ...extra })
        : askService<BulkAnswer>(config, { action: "replayMatching", filter, ...options, ...extra }, { signal: stop });
    const answer = flags["dry-run"] ? await ask({}) : await startBulkReplay(ask, flags.confirm);
    console.log(JSON.stringify(flags["dry-run"] ? { wouldQueue: answer.count } : { queued: answer.count, bulk: answer.id }));
    if (answer.id) console.error(`progress: GET ${remote?.url ?? ""}/events/replays/${answer.id} on the service, or its console`);
    return;
  }
  const storage = stores;
  if (!flags["dry-run"] && !flags.confirm)
    await refuseAboveCap(storage, query, config.bulkReplayConfirmAbove).catch(async (err: unknown) => {
      await storage.close();
      throw err;
    });
  const direct = flags["dry-run"] ? undefined : await directOperatorActions(config, storage);
  const queue = direct?.eventsQueue;
  const bar = process.stderr.isTTY ? new SingleBar({ format: "replaying {bar} {value} events", stream: process.stderr }) : undefined;
  bar?.start(0, 0);
  let count: number;
  try {
    count = await replayEvents(
      { eventLog: storage.eventLog, queue },
      {
        query,
        handler: flags.handler,
        dryRun: flags["dry-run"],
        fresh: flags.fresh ? storage.steps : undefined,
        ...(queue ? { removeFailedJobs: (ids: readonly string[]) => removeReplayedFailedJobs(queue, ids) } : {}),
        onProgress: (n, page) => {
          if (flags["dry-run"])
            for (const event of page)
              console.log([printable(event.id), printable(event.type), event.status, event.receivedAt.toISOString()].join("\t"));
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
  console.log(JSON.stringify(flags["dry-run"] ? { wouldQueue: count } : { queued: count }));
}

/** The refusal of a replay of more events than BULK_REPLAY_CONFIRM_ABOVE (`cap`, when it is this process's own) without --confirm. */
const tooManyToReplay = (count: number, cap?: number) =>
  new CommandError(
    `${count} events match, more than ${cap === undefined ? "the service's BULK_REPLAY_CONFIRM_ABOVE" : `BULK_REPLAY_CONFIRM_ABOVE (${cap})`} allows without confirmation: add --confirm to replay them`,
    "confirm_required",
  );

/** Counted before anything is queued, as the operator API counts a bulk replay: above the cap it needs --confirm. */
async function refuseAboveCap(storage: Storage, query: EventQuery, cap: number): Promise<void> {
  const count = await replayEvents({ eventLog: storage.eventLog, queue: undefined }, { query, dryRun: true });
  if (count > cap) throw tooManyToReplay(count, cap);
}

const refusedUnconfirmed = (err: unknown) => err instanceof CommandError && err.refusal === "confirm_required";

/**
 * Starts a bulk replay in a service (at --url, or the one holding the store), whose cap is its own:
 * without --confirm a refusal is told as the count and the flag to add; with it, the count of a dry
 * run is sent as the confirmation (counted again when events arrived in between).
 */
async function startBulkReplay(
  ask: (extra: { dryRun?: true; confirm?: number }) => Promise<BulkAnswer>,
  confirm: boolean,
): Promise<BulkAnswer> {
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

async function replayFailedJobs(config: Config, queueName: string, what: string): Promise<void> {
  const connection = await openCliRedis(config);
  const queue = queueName === SYNC_QUEUE ? createSyncQueue({ connection, config }) : createEventsQueue({ connection, config });
  try {
    if (what === "list") {
      const jobs = await queue.getFailed(0, 999);
      for (const job of jobs) {
        const data = job.data as { id?: string };
        const fields = [
          job.id ?? "-",
          job.name,
          typeof data.id === "string" ? data.id : "-",
          `attempts=${job.attemptsMade}`,
          job.failedReason,
        ];
        console.log(fields.map(printable).join("\t"));
      }
      console.error(`${jobs.length} failed job(s) in ${queueName}${jobs.length === 1000 ? " (first 1000 shown)" : ""}`);
    } else if (what === "all") {
      const total = await queue.getFailedCount();
      let done = 0;
      while (done < total) {
        const batch = await queue.getFailed(0, 99);
        if (batch.length === 0) break;
        for (const job of batch) await job.retry("failed");
        done += batch.length;
      }
      console.error(`replayed ${done}/${total} failed job(s) of ${queueName}`);
    } else {
      const job = await queue.getJob(what);
      if (!job) throw new UsageError(`no job ${what} in ${queueName}`);
      if (!(await job.isFailed())) throw new UsageError(`job ${what} is ${await job.getState()}, not failed`);
      await job.retry("failed");
      console.error(`job ${what} moved back to ${queueName}`);
    }
  } finally {
    await queue.close();
    await connection.quit();
  }
}
