// npm run bench: ingest, worker, sync and memory, measured in one run on this machine, with the
// load generator (wrk) on loopback. Prints a table and writes JSON under bench/results/.
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { parseArgs } from "node:util";
import { ensureRedis } from "../src/local/ensure-redis.js";
import { benchIngest, median, type IngestKey, type IngestRun } from "./ingest.js";
import { assertWrk } from "./lib/wrk.js";
import { benchMemory } from "./memory.js";
import { benchSync } from "./sync.js";
import { benchWorker } from "./event-worker-throughput.js";

const { values } = parseArgs({
  options: {
    only: { type: "string" },
    rounds: { type: "string", default: "3" },
    seconds: { type: "string", default: "10" },
    "memory-seconds": { type: "string", default: "60" },
  },
});
function wholeNumber(name: "rounds" | "seconds" | "memory-seconds"): number {
  const raw = values[name];
  const n = Number(raw);
  if (Number.isInteger(n) && n >= 1) return n;
  process.stderr.write(`bench: --${name} must be a whole number of at least 1, got "${raw}"\n`);
  process.exit(2);
}
const rounds = wholeNumber("rounds");
const seconds = wholeNumber("seconds");
const memorySeconds = wholeNumber("memory-seconds");
const want = (part: string) => !values.only || values.only.split(",").includes(part);
const log = (s: string) => process.stderr.write(`${s}\n`);
const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

assertWrk();
// A Redis of the bench's own (AOF on, as production), unless REDIS_URL is given.
const redis = await ensureRedis(process.env.BENCH_REDIS_URL);
const results: Record<string, unknown> = { at: new Date().toISOString(), node: process.version, cpus: cpus().length };
try {
  if (want("ingest")) {
    const rows = await benchIngest({ redisUrl: redis.url, rounds, seconds, warmupSeconds: 3, connections: 50, log });
    // Ratios pair the runs of one round (minutes apart at most); the table shows medians.
    const ratio = (x: IngestKey, y: IngestKey) => rows[x].runs.map((run, i) => run.rps / rows[y].runs[i]!.rps);
    const ratios = { cOverA: ratio("c", "a"), cOverB: ratio("c", "b"), cOverD: ratio("c", "d") };
    results.ingest = { rows, ratios };
    const med = (key: IngestKey, pick: (run: IngestRun) => number | undefined) => {
      const found = rows[key].runs.map(pick).filter((v): v is number => v !== undefined);
      return found.length ? median(found) : undefined;
    };
    const us = (v: number | undefined) => (v === undefined ? "—" : fmt(v));
    const spread = (r: number[]) => `${fmt(median(r), 2)} (${fmt(Math.min(...r), 2)}–${fmt(Math.max(...r), 2)})`;
    console.log("\nIngest: signed ~1 KB unique events, 50 connections, %s rounds of %ss after a 3 s warm-up; medians", rounds, seconds);
    console.log("| server | req/s | p50 ms | p99 ms | non-200 | jobs in Redis / 200s | CPU µs per request: server | wrk | Redis (add script) |");
    console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (const key of ["a", "b", "c", "d"] as const) {
      const runs = rows[key].runs;
      const jobs = runs.every((r) => r.jobsInRedis !== undefined) ? `${fmt(runs.reduce((n, r) => n + r.jobsInRedis!, 0))} / ${fmt(runs.reduce((n, r) => n + r.ok, 0))}` : "—";
      const redisUs = med(key, (r) => r.cpu.redisUs);
      console.log(
        `| ${rows[key].name} | ${fmt(med(key, (r) => r.rps)!)} | ${fmt(med(key, (r) => r.p50Ms)!, 2)} | ${fmt(med(key, (r) => r.p99Ms)!, 2)} | ${runs.reduce((n, r) => n + r.errors, 0)} | ${jobs} | ${us(med(key, (r) => r.cpu.serverUs))} | ${us(med(key, (r) => r.cpu.wrkUs))} | ${redisUs === undefined ? "—" : `${fmt(redisUs)} (${us(med(key, (r) => r.cpu.addScriptUs))})`} |`,
      );
    }
    console.log(`ratios, median (range) of ${rounds} rounds: c/a ${spread(ratios.cOverA)} (target ≥ 0.65), c/b ${spread(ratios.cOverB)}, c/d ${spread(ratios.cOverD)} (target ≥ 3); p99 of c ${fmt(med("c", (r) => r.p99Ms)!, 1)} ms (target ≤ 30)`);
    const total = (key: IngestKey) => med(key, (r) => r.cpu.serverUs + r.cpu.wrkUs + (r.cpu.redisUs ?? 0))!;
    console.log(`CPU per request, server + wrk + Redis: a ${fmt(total("a"))}, b ${fmt(total("b"))}, c ${fmt(total("c"))}, d ${fmt(total("d"))} µs (a/c ${fmt(total("a") / total("c"), 2)}, d/c ${fmt(total("d") / total("c"), 2)})`);
    console.log("jobs in Redis can exceed 200s: wrk drops the answers still in flight when it stops.");
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
    log(`memory: ${memorySeconds} s of sustained load`);
    const m = await benchMemory({ redisUrl: redis.url, seconds: memorySeconds, connections: 20, log });
    results.memory = m;
    console.log(`\nMemory (ROLE=all, ${memorySeconds} s at ${fmt(m.rps)} req/s, 20 connections): RSS ${fmt(m.rssBeforeMiB, 1)} MiB before, ${fmt(m.rssPeakMiB, 1)} MiB peak, ${fmt(m.rssAfterMiB, 1)} MiB 15 s after (${fmt(m.afterVsBefore * 100 - 100, 1)} % vs before; target within 20 %)`);
  }
} finally {
  await redis.started?.destroy();
}
mkdirSync("bench/results", { recursive: true });
const file = `bench/results/${String(results.at).replace(/[:.]/g, "-")}.json`;
writeFileSync(file, JSON.stringify(results, null, 2));
console.log(`\nfull figures: ${file}`);
