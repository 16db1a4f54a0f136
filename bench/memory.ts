import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeRequestPool } from "./lib/pool.js";
import { startServerProcess } from "./lib/server-process.js";
import { runWrk } from "./lib/wrk.js";

export interface MemoryRow {
  rssBeforeMiB: number;
  rssPeakMiB: number;
  rssAfterMiB: number;
  afterVsBefore: number;
  requests: number;
  rps: number;
}

/**
 * RSS of the whole service (edge and worker, ROLE=all) before, during and after a sustained load.
 * "Before" is taken after a warm-up, so it includes JIT-compiled code and warmed pools.
 */
export async function benchMemory(opts: {
  redisUrl: string;
  seconds: number;
  connections: number;
  log: (s: string) => void;
}): Promise<MemoryRow> {
  const tag = randomUUID().slice(0, 6);
  const warmPool = join(tmpdir(), `svc-mem-warm-${tag}`);
  const runPool = join(tmpdir(), `svc-mem-run-${tag}`);
  writeRequestPool(warmPool, 20_000, `mw${tag}`);
  // The pool wraps around when the load outlasts it: later copies then take the dedup path.
  writeRequestPool(runPool, 150_000, `mr${tag}`);
  const proc = await startServerProcess("bench/servers/edge.ts", {
    REDIS_URL: opts.redisUrl,
    QUEUE_PREFIX: `bench-m-${tag}`,
    ROLE: "all",
    KEEP_COMPLETED_JOBS: "1000",
  });
  try {
    await runWrk(`${proc.url}/webhooks`, warmPool, { seconds: 5, connections: opts.connections, threads: 1 });
    await new Promise((r) => setTimeout(r, 5000));
    const before = proc.rssMiB();
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, proc.rssMiB())), 500);
    const load = await runWrk(`${proc.url}/webhooks`, runPool, { seconds: opts.seconds, connections: opts.connections, threads: 1 });
    clearInterval(sampler);
    opts.log(`memory: load done (${Math.round(load.rps)} req/s), letting the worker drain`);
    await new Promise((r) => setTimeout(r, 15_000));
    const after = proc.rssMiB();
    return {
      rssBeforeMiB: before,
      rssPeakMiB: peak,
      rssAfterMiB: after,
      afterVsBefore: after / before,
      requests: load.requests,
      rps: load.rps,
    };
  } finally {
    await proc.stop();
    rmSync(warmPool, { force: true });
    rmSync(runPool, { force: true });
  }
}
