import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import pg from "pg";
import { processCpuSeconds, processTreeCpuSeconds, redisCommandStats, redisCpu, type CommandStats } from "./lib/cpu.js";
import { assertPoolNotWrapped, POOL_EVENTS_PER_SECOND, writeRequestPool } from "./lib/pool.js";
import { startServerProcess, type ServerProcess } from "./lib/server-process.js";
import { runWrk } from "./lib/wrk.js";

/** One end-to-end run: a receiver and a worker process side by side, under the same load. */
export interface EndToEndRun {
  /** 200s answered during the load (wrk's requests − errors). */
  accepted: number;
  /** Jobs the worker finished because of this load. */
  processed: number;
  /** processed ÷ seconds from the load's start to the last job finishing: the sustained rate. */
  eventsPerSecond: number;
  /** processed by the time the load stopped, ÷ its seconds. */
  duringLoadPerSecond: number;
  edgeRps: number;
  p99Ms: number;
  /** CPU µs per processed event: receiver, worker, Redis, PostgreSQL (when the bench runs it and the pair uses it). */
  cpu: { receiverUs: number; workerUs: number; redisUs: number; postgresUs?: number };
  /** Redis commands per processed event: calls and µs inside each (INFO commandstats). */
  redisCommands: Record<string, { calls: number; us: number }>;
}

export interface EndToEndPair {
  name: string;
  receiver: string;
  worker: string;
  /** Its processes share the bench's PostgreSQL database (our web and worker roles). */
  usesDatabase?: boolean;
}

/** The PostgreSQL both of our processes use: a throwaway server the bench started, or BENCH_DATABASE_URL. */
export interface BenchDatabase {
  url: string;
  /** What the table says about it. */
  label: string;
  /** The server's postmaster, when the bench runs it: its CPU (and its backends') is measured. */
  pid?: number;
}

export const OURS_E2E: EndToEndPair = {
  name: "ours: `--role web` + `--role worker` (handlers straight from the ingest stream), no-op handler",
  receiver: "bench/servers/edge.ts",
  worker: "bench/servers/edge-worker.ts",
  usesDatabase: true,
};

/** Events fully processed per second, ours against a peer, in interleaved rounds on one Redis. */
export async function benchEndToEnd(opts: {
  redisUrl: string;
  pairs: readonly EndToEndPair[];
  rounds: number;
  seconds: number;
  warmupSeconds: number;
  connections: number;
  concurrency: number;
  database: BenchDatabase;
  log: (s: string) => void;
}): Promise<EndToEndRun[][]> {
  const dir = join(tmpdir(), `svc-bench-e2e-${randomUUID().slice(0, 8)}`);
  const warmPool = `${dir}-warm`;
  const runPool = `${dir}-run`;
  writeRequestPool(warmPool, 40_000, "ew");
  const runPoolSize = Math.max(60_000, opts.seconds * POOL_EVENTS_PER_SECOND);
  writeRequestPool(runPool, runPoolSize, "er");
  const redis = new Redis(opts.redisUrl, { maxRetriesPerRequest: null });
  const runs: EndToEndRun[][] = opts.pairs.map(() => []);
  const wrkOptions = (seconds: number) => ({ seconds, connections: opts.connections, threads: 1 });
  try {
    for (let round = 1; round <= opts.rounds; round++) {
      for (const [i, pair] of opts.pairs.entries()) {
        const env: Record<string, string> = {
          REDIS_URL: opts.redisUrl,
          QUEUE_PREFIX: `bench-e2e-${randomUUID().slice(0, 6)}`,
          WORKER_CONCURRENCY: String(opts.concurrency),
        };
        // Web and worker are separate processes: they share one PostgreSQL server (an embedded
        // store admits one process), each run in a schema of its own, dropped afterwards.
        const schema = `bench_${randomUUID().replaceAll("-", "").slice(0, 10)}`;
        if (pair.usesDatabase) Object.assign(env, { DATABASE_URL: opts.database.url, DATABASE_SCHEMA: schema });
        const pgCpu = () => (pair.usesDatabase && opts.database.pid ? processTreeCpuSeconds(opts.database.pid) : 0);
        const procs: ServerProcess[] = [];
        try {
          const receiver = await startServerProcess(pair.receiver, env);
          procs.push(receiver);
          const worker = await startServerProcess(pair.worker, env);
          procs.push(worker);
          const processed = async () => (await (await fetch(worker.url)).json()) as { count: number; lastAt: number };
          await runWrk(`${receiver.url}/webhooks`, warmPool, wrkOptions(opts.warmupSeconds));
          const before = await settled(processed);
          const cpu0 = [
            processCpuSeconds(receiver.child.pid!),
            processCpuSeconds(worker.child.pid!),
            (await redisCpu(redis)).seconds,
            pgCpu(),
          ];
          const commands0 = await redisCommandStats(redis);
          const startedAt = Date.now();
          const load = await runWrk(`${receiver.url}/webhooks`, runPool, wrkOptions(opts.seconds));
          assertPoolNotWrapped(load.requests, runPoolSize, pair.name);
          const atLoadEnd = await processed();
          const after = await settled(processed);
          const cpu1 = [
            processCpuSeconds(receiver.child.pid!),
            processCpuSeconds(worker.child.pid!),
            (await redisCpu(redis)).seconds,
            pgCpu(),
          ];
          const commands1 = await redisCommandStats(redis);
          const done = after.count - before.count;
          const us = (k: number) => ((cpu1[k]! - cpu0[k]!) / done) * 1e6;
          const run: EndToEndRun = {
            accepted: load.requests - load.errors,
            processed: done,
            eventsPerSecond: done / ((after.lastAt - startedAt) / 1000),
            duringLoadPerSecond: (atLoadEnd.count - before.count) / opts.seconds,
            edgeRps: load.rps,
            p99Ms: load.p99Ms,
            cpu: {
              receiverUs: us(0),
              workerUs: us(1),
              redisUs: us(2),
              ...(pair.usesDatabase && opts.database.pid ? { postgresUs: us(3) } : {}),
            },
            redisCommands: perEvent(commands0, commands1, done),
          };
          runs[i]!.push(run);
          opts.log(
            `e2e round ${round} ${pair.name}: ${Math.round(run.eventsPerSecond)} events/s processed (${Math.round(run.duringLoadPerSecond)}/s during the load), edge ${Math.round(run.edgeRps)} req/s, accepted ${run.accepted}, processed ${run.processed}, CPU µs/event receiver ${run.cpu.receiverUs.toFixed(0)} worker ${run.cpu.workerUs.toFixed(0)} redis ${run.cpu.redisUs.toFixed(0)}${run.cpu.postgresUs === undefined ? "" : ` postgres ${run.cpu.postgresUs.toFixed(0)}`}; redis per event: ${Object.entries(
              run.redisCommands,
            )
              .sort((a, b) => b[1].us - a[1].us)
              .slice(0, 8)
              .map(([c, v]) => `${c} ${v.calls.toFixed(2)}×/${v.us.toFixed(1)}µs`)
              .join(", ")}`,
          );
        } finally {
          for (const p of procs.reverse()) await p.stop();
          const keys = await redis.keys(`${env.QUEUE_PREFIX}:*`);
          for (let k = 0; k < keys.length; k += 1000) await redis.del(...keys.slice(k, k + 1000));
          if (pair.usesDatabase) await dropSchema(opts.database.url, schema);
        }
      }
    }
  } finally {
    await redis.quit();
    rmSync(warmPool, { force: true });
    rmSync(runPool, { force: true });
  }
  return runs;
}

/** Each Redis command's calls and µs between two snapshots, per processed event. */
function perEvent(before: CommandStats, after: CommandStats, events: number): Record<string, { calls: number; us: number }> {
  const out: Record<string, { calls: number; us: number }> = {};
  for (const [cmd, a] of Object.entries(after)) {
    const b = before[cmd] ?? { calls: 0, usec: 0 };
    if (a.calls > b.calls) out[cmd] = { calls: (a.calls - b.calls) / events, us: (a.usec - b.usec) / events };
  }
  return out;
}

async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`drop schema if exists ${schema} cascade`);
  } finally {
    await client.end();
  }
}

/** The worker's count once it stops moving (two reads 500 ms apart agree), bounded at 180 s. */
async function settled(read: () => Promise<{ count: number; lastAt: number }>): Promise<{ count: number; lastAt: number }> {
  const deadline = Date.now() + 180_000;
  let last = await read();
  for (;;) {
    await new Promise((r) => setTimeout(r, 500));
    const now = await read();
    if (now.count === last.count || Date.now() > deadline) return now;
    last = now;
  }
}
