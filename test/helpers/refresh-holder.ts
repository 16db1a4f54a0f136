/**
 * A second process for the refresh crash test: serves the sync queue's refresh job under the
 * prefix in argv[3] (Redis at argv[2], lock duration argv[4] ms), prints `reading` once a refresh
 * took the kind's pending ids, and never finishes that read: the test kills the process mid-read.
 */
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import pino from "pino";
import { SYNC_QUEUE } from "../../src/queue/events-queue.js";
import { createRefreshJob } from "../../src/sync/refresh-queue.js";
import { createRefreshQueue } from "../../src/sync/refresh-queue.js";
import type { RefreshJobData } from "../../src/sync/refresh-queue.js";
import { createSyncWorker } from "../../src/worker/sync-worker.js";

const [url, prefix, lockMs] = process.argv.slice(2);
if (!url || !prefix || !lockMs) throw new Error("usage: refresh-holder <redisUrl> <prefix> <lockMs>");
const connection = new Redis(url, { maxRetriesPerRequest: null });
const queue = new Queue<RefreshJobData>(SYNC_QUEUE, { connection, prefix });
const scheduler = createRefreshQueue({ redis: connection, queue, prefix, debounceMs: 0 });
const logger = pino({ level: "silent" });
const refresh = createRefreshJob({
  scheduler,
  pace: () => Promise.resolve(0),
  logger,
  async refresh(kind) {
    await scheduler.pending(kind);
    process.stdout.write("reading\n");
    return new Promise(() => undefined);
  },
});
const worker = createSyncWorker({
  connection,
  prefix,
  queue,
  processors: { refresh },
  concurrency: 2,
  lockMs: Number(lockMs),
  maxStalls: 1,
  logger,
});
void worker.run();
