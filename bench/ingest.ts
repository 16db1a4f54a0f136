import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { EVENTS_QUEUE } from "../src/queue/names.js";
import { writeRequestPool } from "./lib/pool.js";
import { startServerProcess } from "./lib/server-process.js";
import { runWrk, type WrkResult } from "./lib/wrk.js";

export interface IngestRow extends WrkResult {
  name: string;
  /** Jobs found in Redis after the run (durable servers only). */
  jobsInRedis?: number;
  /** 200s answered (requests − errors), to compare with jobsInRedis. */
  ok: number;
}

const SERVERS = [
  { key: "a", name: "(a) plain Hono, read body", script: "bench/servers/plain.ts", durable: false },
  { key: "b", name: "(b) our edge, verify only", script: "bench/servers/verify-only.ts", durable: false },
  { key: "c", name: "(c) our edge, verify + enqueue", script: "bench/servers/edge.ts", durable: true },
  { key: "d", name: "(d) Express + raw + queue.add", script: "bench/servers/express-peer.ts", durable: true },
] as const;

/** Ingest throughput of the four servers, one after the other, in one run. */
export async function benchIngest(opts: { redisUrl: string; seconds: number; warmupSeconds: number; connections: number; log: (s: string) => void }): Promise<Record<string, IngestRow>> {
  const dir = join(tmpdir(), `svc-bench-${randomUUID().slice(0, 8)}`);
  const rows: Record<string, IngestRow> = {};
  const redis = new Redis(opts.redisUrl, { maxRetriesPerRequest: null });
  // Unique events for warm-up and run, written once: each server gets its own queue prefix, so
  // the same ids are new to each and no 200 is a deduplicated redelivery.
  const warmPool = `${dir}-warm`;
  const runPool = `${dir}-run`;
  writeRequestPool(warmPool, 40_000, "w");
  writeRequestPool(runPool, Math.max(60_000, opts.seconds * 15_000), "r");
  try {
    for (const server of SERVERS) {
      const prefix = `bench-${server.key}-${randomUUID().slice(0, 6)}`;
      opts.log(`ingest ${server.name}: starting`);
      const proc = await startServerProcess(server.script, { REDIS_URL: opts.redisUrl, QUEUE_PREFIX: prefix });
      try {
        await runWrk(`${proc.url}/webhooks`, warmPool, { seconds: opts.warmupSeconds, connections: opts.connections, threads: 1 });
        const queue = new Queue(EVENTS_QUEUE, { connection: redis, prefix });
        // Requests still in flight when the warm-up stopped land a moment later: count once settled.
        const before = server.durable ? await settledCount(queue) : 0;
        const result = await runWrk(`${proc.url}/webhooks`, runPool, { seconds: opts.seconds, connections: opts.connections, threads: 1 });
        const row: IngestRow = { name: server.name, ...result, ok: result.requests - result.errors };
        if (server.durable) row.jobsInRedis = (await settledCount(queue)) - before;
        rows[server.key] = row;
        opts.log(`ingest ${server.name}: ${Math.round(row.rps)} req/s, p50 ${row.p50Ms.toFixed(2)} ms, p99 ${row.p99Ms.toFixed(2)} ms, errors ${row.errors}${row.jobsInRedis !== undefined ? `, jobs ${row.jobsInRedis}` : ""}`);
        await queue.obliterate({ force: true }).catch(() => {});
        await queue.close();
      } finally {
        await proc.stop();
      }
    }
  } finally {
    await redis.quit();
    rmSync(warmPool, { force: true });
    rmSync(runPool, { force: true });
  }
  return rows;
}

/** The job count once two reads 200 ms apart agree (nothing still arriving). */
async function settledCount(queue: Queue): Promise<number> {
  let last = await countJobs(queue);
  for (;;) {
    await new Promise((r) => setTimeout(r, 200));
    const now = await countJobs(queue);
    if (now === last) return now;
    last = now;
  }
}

async function countJobs(queue: Queue): Promise<number> {
  const counts = await queue.getJobCounts("waiting", "active", "completed", "failed", "delayed", "prioritized");
  return Object.values(counts).reduce((a, b) => a + b, 0);
}
