import { parseArgs } from "node:util";
import { Queue } from "bullmq";
import { loadConfig } from "../../config/index.js";
import { createRedisConnection } from "../../redis/connection.js";
import { EVENTS_QUEUE } from "../../queue/names.js";
import { SYNC_QUEUE } from "../../queue/names.js";
import { UsageError } from "../usage-error.js";

export const help = `svc-webhooks replay list | <job-id> | all [--queue events|sync]

Failed jobs are kept (KEEP_FAILED_JOBS / KEEP_FAILED_SECONDS) and can be run again:
  list       prints the failed jobs: id, event type, event id, attempts, reason
  <job-id>   moves that failed job back to the queue
  all        moves every failed job back, with progress
  --queue    events (default) or sync`;

export async function run(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args: argv, options: { queue: { type: "string", default: "events" } }, allowPositionals: true, strict: true });
  const [what, ...extra] = positionals;
  if (!what || extra.length > 0) throw new UsageError(`replay takes one of: list, <job-id>, all\n\n${help}`);
  const queueName = values.queue === "sync" ? SYNC_QUEUE : values.queue === "events" ? EVENTS_QUEUE : undefined;
  if (!queueName) throw new UsageError(`--queue must be events or sync, not "${values.queue}"`);

  const config = loadConfig({ ...process.env, ROLE: "worker" });
  const connection = createRedisConnection(config.redisUrl, "worker", { cluster: config.redisCluster });
  const queue = new Queue(queueName, { connection, prefix: config.queuePrefix });
  try {
    if (what === "list") {
      const jobs = await queue.getFailed(0, 999);
      for (const job of jobs) {
        const data = job.data as { id?: string };
        console.log([job.id, job.name, data.id ?? "-", `attempts=${job.attemptsMade}`, job.failedReason].join("\t"));
      }
      console.error(`${jobs.length} failed job(s) in ${queueName}${jobs.length === 1000 ? " (first 1000 shown)" : ""}`);
    } else if (what === "all") {
      const total = await queue.getFailedCount();
      let done = 0;
      // retryJobs moves them in batches; count as they go so a long replay shows progress.
      while (done < total) {
        const batch = await queue.getFailed(0, 99);
        if (batch.length === 0) break;
        for (const job of batch) await job.retry("failed");
        done += batch.length;
        process.stderr.write(`\rreplayed ${done}/${total}`);
      }
      process.stderr.write(`\rreplayed ${done}/${total} failed job(s) of ${queueName}\n`);
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
