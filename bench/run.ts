// npm run bench: ingest, worker, sync and memory, measured in one run on this machine, with the
// load generator (wrk) on loopback. Prints a table and writes JSON under bench/results/.
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { parseArgs } from "node:util";
import { ensureRedis } from "../src/local/ensure-redis.js";
import { benchIngest } from "./ingest.js";
import { assertWrk } from "./lib/wrk.js";
import { benchMemory } from "./memory.js";
import { benchSync } from "./sync.js";
import { benchWorker } from "./worker.js";

const { values } = parseArgs({
  options: {
    only: { type: "string" },
    seconds: { type: "string", default: "10" },
    "memory-seconds": { type: "string", default: "60" },
  },
});
const want = (part: string) => !values.only || values.only.split(",").includes(part);
const log = (s: string) => process.stderr.write(`${s}\n`);
const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

assertWrk();
// A Redis of the bench's own (AOF on, as production), unless REDIS_URL is given.
const redis = await ensureRedis(process.env.BENCH_REDIS_URL);
const results: Record<string, unknown> = { at: new Date().toISOString(), node: process.version, cpus: cpus().length };
try {
  if (want("ingest")) {
    const rows = await benchIngest({ redisUrl: redis.url, seconds: Number(values.seconds), warmupSeconds: 3, connections: 50, log });
    const a = rows.a!, b = rows.b!, c = rows.c!, d = rows.d!;
    results.ingest = { rows, ratios: { cOverA: c.rps / a.rps, cOverB: c.rps / b.rps, cOverD: c.rps / d.rps } };
    console.log("\nIngest: signed ~1 KB unique events, 50 connections, %ss after a 3 s warm-up", values.seconds);
    console.log("| server | req/s | p50 ms | p99 ms | non-200 | jobs in Redis (≥ 200s: wrk drops its last in-flight answers) |");
    console.log("|---|---:|---:|---:|---:|---:|");
    for (const r of [a, b, c, d]) console.log(`| ${r.name} | ${fmt(r.rps)} | ${fmt(r.p50Ms, 2)} | ${fmt(r.p99Ms, 2)} | ${r.errors} | ${r.jobsInRedis === undefined ? "—" : `${fmt(r.jobsInRedis)} of ${fmt(r.ok)} answered 200`} |`);
    console.log(`ratios: c/a ${fmt(c.rps / a.rps, 2)} (target ≥ 0.65), c/b ${fmt(c.rps / b.rps, 2)}, c/d ${fmt(c.rps / d.rps, 2)} (target ≥ 3); p99 of c ${fmt(c.p99Ms, 1)} ms (target ≤ 30)`);
  }
  if (want("worker")) {
    log("worker: draining 20,000 review.created jobs");
    const w = await benchWorker({ redisUrl: redis.url, jobs: 20_000, concurrency: 50 });
    results.worker = w;
    console.log(`\nWorker: ${fmt(w.jobs)} review.created jobs (no API call, one mirror write each), concurrency 50: ${fmt(w.jobsPerSecond)} jobs/s (${fmt(w.seconds, 1)} s)`);
  }
  if (want("sync")) {
    const rows = [];
    for (const events of [100, 1000]) {
      log(`sync: burst of ${events} events`);
      rows.push(await benchSync({ redisUrl: redis.url, events, restaurants: 5 }));
    }
    results.sync = rows;
    console.log("\nSync: a burst of N order events across 5 restaurants, sandbox at 120 requests/min");
    console.log("| N | API calls | events per call | 429s | mirror equal after | naive calls | naive time at 120/min |");
    console.log("|---:|---:|---:|---:|---:|---:|---:|");
    for (const r of rows) console.log(`| ${fmt(r.events)} | ${r.apiCalls} | ${fmt(r.eventsPerCall, 1)} | ${r.rateLimited} | ${fmt(r.secondsToMirrorEqual, 1)} s | ${fmt(r.naiveCalls)} | ${fmt(r.naiveSecondsAtLimit)} s |`);
  }
  if (want("memory")) {
    log(`memory: ${values["memory-seconds"]} s of sustained load`);
    const m = await benchMemory({ redisUrl: redis.url, seconds: Number(values["memory-seconds"]), connections: 20, log });
    results.memory = m;
    console.log(`\nMemory (ROLE=all, ${values["memory-seconds"]} s at ${fmt(m.rps)} req/s, 20 connections): RSS ${fmt(m.rssBeforeMiB, 1)} MiB before, ${fmt(m.rssPeakMiB, 1)} MiB peak, ${fmt(m.rssAfterMiB, 1)} MiB 15 s after (${fmt(m.afterVsBefore * 100 - 100, 1)} % vs before; target within 20 %)`);
  }
} finally {
  await redis.started?.destroy();
}
mkdirSync("bench/results", { recursive: true });
const file = `bench/results/${String(results.at).replace(/[:.]/g, "-")}.json`;
writeFileSync(file, JSON.stringify(results, null, 2));
console.log(`\nfull figures: ${file}`);
