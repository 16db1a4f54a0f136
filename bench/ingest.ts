import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { EVENTS_QUEUE } from "../src/queue/events-queue.js";
import { redisKeys } from "../src/redis/redis.js";
import { assertPoolNotWrapped, POOL_EVENTS_PER_SECOND, writeRequestPool } from "./lib/pool.js";
import { startOtlpSink } from "./lib/otlp-sink.js";
import { BEFORE_TRACING, extractBaselineTree } from "./lib/baseline-tree.js";
import { startServerProcess } from "./lib/server-process.js";
import { exitedChildrenCpuSeconds, processCpuSeconds, redisCpu } from "./lib/cpu.js";
import { runWrk, type WrkResult } from "./lib/wrk.js";

/** One measured run of one server. */
export interface IngestRun extends WrkResult {
  /** 200s answered (requests − errors), to compare with jobsInRedis. */
  ok: number;
  /** Events found in Redis after the run (durable servers only): jobs, or stream entries for ours. */
  jobsInRedis?: number;
  /** CPU per request answered, in µs: the server process, wrk, and Redis (durable servers). */
  cpu: { serverUs: number; wrkUs: number; redisUs?: number; addScriptUs?: number };
}

export interface IngestRow {
  name: string;
  runs: IngestRun[];
  /** Why the row was not run (the A/B row without git or its commit). */
  skipped?: string;
}

export type IngestKey = "a" | "b" | "c" | "p" | "g" | "t" | "d" | "e" | "f";
/** The receivers users would write themselves; "ours ÷ best peer" compares against the fastest. */
export const PEERS = ["d", "e", "f"] as const;

/** `durable`: stores events in Redis (counted after each run): in BullMQ, or in our ingest stream. */
export const SERVERS: readonly {
  key: IngestKey;
  name: string;
  script: string;
  durable: boolean;
  stream?: true;
  env?: Record<string, string>;
  /** Export traces (OTLP/HTTP, the SDK's default protobuf) to a local sink that drops them. */
  tracing?: true;
  /** Run `script` from the commit before tracing landed (BEFORE_TRACING), not from this checkout. */
  beforeTracing?: true;
}[] = [
  { key: "a", name: "(a) plain Hono, read body (ceiling)", script: "bench/servers/plain.ts", durable: false },
  { key: "b", name: "(b) our edge, verify only", script: "bench/servers/verify-only.ts", durable: false },
  { key: "c", name: "(c) **ours**: edge, verify + stream append", script: "bench/servers/edge.ts", durable: true, stream: true },
  {
    key: "p",
    name: `(c₀) ours before tracing (${BEFORE_TRACING}): the same edge, no tracing in the code`,
    script: "bench/servers/edge.ts",
    durable: true,
    stream: true,
    beforeTracing: true,
  },
  {
    key: "g",
    name: "(c′) ours at LOG_LEVEL=debug: also a log line per accepted delivery",
    script: "bench/servers/edge.ts",
    durable: true,
    stream: true,
    env: { LOG_LEVEL: "debug" },
  },
  {
    key: "t",
    name: "(c″) ours with tracing on: a span per delivery, OTLP/HTTP to a local sink",
    script: "bench/servers/edge.ts",
    durable: true,
    stream: true,
    tracing: true,
  },
  { key: "d", name: "(d) Express + raw + verify + queue.add", script: "bench/servers/express-peer.ts", durable: true },
  { key: "e", name: "(e) node:http + octokit verify + queue.add", script: "bench/servers/octokit-peer.ts", durable: true },
  { key: "f", name: "(f) Hono + HMAC + JSON.parse + queue.add", script: "bench/servers/hono-peer.ts", durable: true },
];

/**
 * Ingest throughput of the four servers in one run: `rounds` rounds of a, b, c, d one after the
 * other, so each ratio compares runs minutes apart at most and the spread shows the machine's noise.
 */
export async function benchIngest(opts: {
  redisUrl: string;
  rounds: number;
  seconds: number;
  warmupSeconds: number;
  connections: number;
  log: (s: string) => void;
  /** Only these rows (a quick look at some of them); all by default. */
  only?: readonly IngestKey[];
}): Promise<Record<IngestKey, IngestRow>> {
  const dir = join(tmpdir(), `svc-bench-${randomUUID().slice(0, 8)}`);
  const rows = Object.fromEntries(SERVERS.map((s) => [s.key, { name: s.name, runs: [] as IngestRun[] }])) as Record<IngestKey, IngestRow>;
  const redis = new Redis(opts.redisUrl, { maxRetriesPerRequest: null });
  // Stored events: BullMQ jobs for the peers; for ours (no worker runs beside the edge here) the stream.
  const stored = (stream: boolean, queue: Queue, prefix: string) =>
    stream ? redis.xlen(redisKeys(prefix).ingest.stream) : countJobs(queue);
  // Unique events for warm-up and run, written once: each run gets its own queue prefix, so the
  // same ids are new to it and no 200 is a deduplicated redelivery.
  const warmPool = `${dir}-warm`;
  const runPool = `${dir}-run`;
  writeRequestPool(warmPool, 40_000, "w");
  const runPoolSize = Math.max(60_000, opts.seconds * POOL_EVENTS_PER_SECOND);
  writeRequestPool(runPool, runPoolSize, "r");
  const wrkOptions = (seconds: number) => ({ seconds, connections: opts.connections, threads: 1 });
  let servers = SERVERS.filter((s) => !opts.only || opts.only.includes(s.key));
  // The A/B row runs the edge of the commit before tracing, extracted for this run only.
  const baseline = servers.some((s) => s.beforeTracing) ? extractBaselineTree() : undefined;
  if (baseline && "skipped" in baseline) {
    opts.log(`ingest: row (c₀) skipped: ${baseline.skipped}`);
    rows.p.skipped = baseline.skipped;
    servers = servers.filter((s) => !s.beforeTracing);
  }
  const baselineDir = baseline && "dir" in baseline ? baseline.dir : undefined;
  const sink = await startOtlpSink();
  try {
    for (let round = 1; round <= opts.rounds; round++) {
      for (const server of abOrder(servers, round)) {
        const prefix = `bench-${server.key}-${randomUUID().slice(0, 6)}`;
        // No worker drains our stream in this table (the end-to-end run has one), so its backlog
        // grows past the default MAX_BACKLOG within a run; a refusal there would be backpressure
        // working, not the edge's speed.
        const proc = await startServerProcess(
          server.script,
          {
            REDIS_URL: opts.redisUrl,
            QUEUE_PREFIX: prefix,
            MAX_BACKLOG: "100000000",
            ...server.env,
            ...(server.tracing ? { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_SERVICE_NAME: "svc-webhooks-bench" } : {}),
          },
          server.beforeTracing ? { cwd: baselineDir, startMs: 180_000 } : {},
        );
        const queue = new Queue(EVENTS_QUEUE, { connection: redis, prefix });
        try {
          await runWrk(`${proc.url}/webhooks`, warmPool, wrkOptions(opts.warmupSeconds));
          // Requests still in flight when the warm-up stopped land a moment later: count once settled.
          const count = () => stored(server.stream ?? false, queue, prefix);
          const jobsBefore = server.durable ? await settledCount(count) : 0;
          const serverCpu = processCpuSeconds(proc.child.pid!);
          const wrkCpu = exitedChildrenCpuSeconds();
          const redisBefore = await redisCpu(redis);
          const result = await runWrk(`${proc.url}/webhooks`, runPool, wrkOptions(opts.seconds));
          if (server.durable) assertPoolNotWrapped(result.requests, runPoolSize, server.name);
          const serverSeconds = processCpuSeconds(proc.child.pid!) - serverCpu;
          const wrkSeconds = exitedChildrenCpuSeconds() - wrkCpu;
          const ok = result.requests - result.errors;
          const run: IngestRun = {
            ...result,
            ok,
            cpu: { serverUs: (serverSeconds / result.requests) * 1e6, wrkUs: (wrkSeconds / result.requests) * 1e6 },
          };
          if (server.durable) {
            run.jobsInRedis = (await settledCount(count)) - jobsBefore;
            const redisAfter = await redisCpu(redis);
            run.cpu.redisUs = ((redisAfter.seconds - redisBefore.seconds) / run.jobsInRedis) * 1e6;
            run.cpu.addScriptUs = (redisAfter.evalshaUsec - redisBefore.evalshaUsec) / (redisAfter.evalshaCalls - redisBefore.evalshaCalls);
          }
          rows[server.key].runs.push(run);
          opts.log(
            `ingest round ${round} ${server.name}: ${Math.round(run.rps)} req/s, p50 ${run.p50Ms.toFixed(2)} ms, p99 ${run.p99Ms.toFixed(2)} ms, errors ${run.errors}` +
              (run.jobsInRedis !== undefined ? `, jobs ${run.jobsInRedis}` : "") +
              `, CPU µs/req server ${run.cpu.serverUs.toFixed(0)} wrk ${run.cpu.wrkUs.toFixed(0)}` +
              (run.cpu.redisUs !== undefined ? ` redis ${run.cpu.redisUs.toFixed(0)} (add script ${run.cpu.addScriptUs!.toFixed(0)})` : ""),
          );
          // Best-effort cleanup between runs.
          await queue.obliterate({ force: true }).catch(() => undefined);
          await redis.del(redisKeys(prefix).ingest.stream);
        } finally {
          await queue.close();
          await proc.stop();
        }
      }
    }
  } finally {
    if (baseline && "dir" in baseline) baseline.remove();
    await sink.close();
    await redis.quit();
    rmSync(warmPool, { force: true });
    rmSync(runPool, { force: true });
  }
  return rows;
}

/**
 * The servers in the order of `round`: the A/B pair, (c) and (c₀), swaps places every other round,
 * so neither always runs right after the other (a machine warming up or calming down would
 * otherwise favour one side).
 */
function abOrder<T extends { key: IngestKey }>(servers: readonly T[], round: number): T[] {
  const order = [...servers];
  const c = order.findIndex((s) => s.key === "c");
  const p = order.findIndex((s) => s.key === "p");
  if (round % 2 === 0 && c >= 0 && p >= 0) [order[c], order[p]] = [order[p]!, order[c]!];
  return order;
}

/** The median of `values` (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The job count once two reads 200 ms apart agree (nothing still arriving). */
async function settledCount(count: () => Promise<number>): Promise<number> {
  let last = await count();
  for (;;) {
    await new Promise((r) => setTimeout(r, 200));
    const now = await count();
    if (now === last) return now;
    last = now;
  }
}

async function countJobs(queue: Queue): Promise<number> {
  const counts = await queue.getJobCounts("waiting", "active", "completed", "failed", "delayed", "prioritized");
  return Object.values(counts).reduce((a, b) => a + b, 0);
}
