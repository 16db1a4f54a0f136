import { parseArgs } from "node:util";
import { Queue } from "bullmq";
import { SingleBar } from "cli-progress";
import type { Config } from "../../config/config.js";
import { loadConfig } from "../../config/index.js";
import { eventQueryFromParams } from "../../mirror/event-query.js";
import type { EventJobData } from "../../queue/event-job.js";
import { configuredJobOptions } from "../../queue/job-options.js";
import { EVENTS_QUEUE, SYNC_QUEUE } from "../../queue/names.js";
import { createRedisConnection } from "../../redis/connection.js";
import { replayEvents } from "../../worker/replay-events.js";
import { openMigratedStorage } from "../open-storage-from-env.js";
import { printable } from "../printable.js";
import { UsageError } from "../usage-error.js";

export const help = `svc-webhooks replay [--since <date>] [--until <date>] [--type <type|family.*>]
                    [--status received|handled|failed] [--handler <key>] [--fresh] [--dry-run]
svc-webhooks replay list | <job-id> | all [--queue events|sync]

From the event log (no positional argument): queues every logged event that matches again, as a
deliberate redelivery (it bypasses the deduplication window), and says how many it queued.
  --since, --until  received at or after / before (ISO 8601: 2026-11-23 or 2026-11-23T10:00:00Z)
  --type            an event type (order.created) or a family (order.*)
  --status          the event's status in the log (failed: its last attempt failed for good)
  --handler         only events on which this handler key failed, and run only that handler
                    (keys as in the log and in GET /events, e.g. user:order.created:0)
  --fresh           run the events' durable steps (ctx.step) again instead of returning their
                    stored results (with --handler: only that handler's steps)
  --dry-run         count and list what would be queued; queue nothing

Failed BullMQ jobs (kept for KEEP_FAILED_SECONDS):
  list       prints the failed jobs: id, event type, event id, attempts, reason
  <job-id>   moves that failed job back to the queue
  all        moves every failed job back
  --queue    events (default) or sync`;

export async function run(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      queue: { type: "string", default: "events" },
      since: { type: "string" },
      until: { type: "string" },
      type: { type: "string" },
      status: { type: "string" },
      handler: { type: "string" },
      "dry-run": { type: "boolean", default: false },
      fresh: { type: "boolean", default: false },
    },
    allowPositionals: true,
    strict: true,
  });
  const config = loadConfig({ ...process.env, ROLE: "worker" });
  if (positionals.length === 0) return replayFromLog(config, values);
  const [what, ...extra] = positionals;
  if (!what || extra.length > 0) throw new UsageError(`replay takes one of: list, <job-id>, all — or filters for the event log\n\n${help}`);
  if (values.fresh) throw new UsageError("--fresh applies to replays from the event log (no list, <job-id> or all)");
  const queueName = values.queue === "sync" ? SYNC_QUEUE : values.queue === "events" ? EVENTS_QUEUE : undefined;
  if (!queueName) throw new UsageError(`--queue must be events or sync, not "${values.queue}"`);
  return replayFailedJobs(config, queueName, what);
}

async function replayFromLog(
  config: Config,
  flags: { since?: string; until?: string; type?: string; status?: string; handler?: string; "dry-run": boolean; fresh: boolean },
): Promise<void> {
  const params: Record<string, string> = {};
  for (const name of ["since", "until", "type", "status", "handler"] as const) if (flags[name] !== undefined) params[name] = flags[name];
  if (flags.handler !== undefined) params.handlerStatus = "failed";
  let query;
  try {
    query = eventQueryFromParams(params);
  } catch (err) {
    throw new UsageError((err as Error).message.replace(/handlerStatus/g, "--handler"));
  }
  const storage = await openMigratedStorage(config);
  const connection = flags["dry-run"] ? undefined : createRedisConnection(config.redisUrl, "worker", { cluster: config.redisCluster });
  const queue = connection
    ? new Queue<EventJobData>(EVENTS_QUEUE, {
        connection,
        prefix: config.queuePrefix,
        defaultJobOptions: configuredJobOptions(config),
      })
    : undefined;
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
    await queue?.close();
    await connection?.quit();
    await storage.close();
  }
  console.log(JSON.stringify(flags["dry-run"] ? { wouldQueue: count } : { queued: count }));
}

async function replayFailedJobs(config: Config, queueName: string, what: string): Promise<void> {
  const connection = createRedisConnection(config.redisUrl, "worker", { cluster: config.redisCluster });
  const queue = new Queue(queueName, { connection, prefix: config.queuePrefix });
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
