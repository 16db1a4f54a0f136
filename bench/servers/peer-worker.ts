// The peer's second half for the end-to-end bench: a plain BullMQ Worker with a no-op processor.
import { Worker } from "bullmq";
import { Redis } from "ioredis";
import { EVENTS_QUEUE } from "../../src/queue/events-queue.js";
import { serveProcessedCount } from "../lib/processed-counter.js";

const counter = serveProcessedCount();
const connection = new Redis(process.env.REDIS_URL!, { maxRetriesPerRequest: null });
const worker = new Worker(EVENTS_QUEUE, () => Promise.resolve(), {
  connection,
  prefix: process.env.QUEUE_PREFIX!,
  concurrency: Number(process.env.WORKER_CONCURRENCY ?? 10),
});
worker.on("completed", () => counter.completed());
// An "error" event without a listener would throw; the bench counts completions only.
worker.on("error", () => undefined);
for (const s of ["SIGINT", "SIGTERM"] as const) process.once(s, () => process.exit(0));
