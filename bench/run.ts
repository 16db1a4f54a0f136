// npm run bench: ingest, worker, sync and memory, measured in one run on this machine, with the
// load generator (wrk) on loopback. Prints a table and writes JSON under bench/results/.
import { appendFileSync, existsSync, mkdirSync, writeFileSync, readFileSync } from "node:fs";
import { cpus } from "node:os";
import { parseArgs } from "node:util";
import { ensureRedis } from "../src/redis/local-server.js";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { findPostgresBin, startPostgresServer, type PostgresServer } from "../test/helpers/postgres-server.js";
import { writeReadmeSection } from "./lib/readme-section.js";
import { benchEndToEnd, OURS_E2E, type BenchDatabase, type EndToEndPair } from "./e2e.js";
import { benchIngest, SERVERS, type IngestKey } from "./ingest.js";
import { endToEndReport, ingestReport } from "./report.js";
import { assertWrk } from "./lib/wrk.js";
import { benchMemory } from "./memory.js";
import { benchEmbeddedMemory, type EmbeddedMemoryRow } from "./embedded-memory.js";
import { benchLive, benchSync, type SyncBenchResult } from "./sync.js";
import { SYNC_FULL_RUNS_HEADER, SYNC_RUNS_HEADER, syncFullReport, syncFullRunLine, syncReport, syncRunLine } from "./sync-report.js";
import { benchWorker } from "./event-worker-throughput.js";
import { alertsReport, benchAlerts } from "./alerts.js";
import {
  accountsRows,
  accountsRunLine,
  accountsSections,
  benchAccounts,
  ACCOUNTS_RUNS_HEADER,
  ACCOUNTS_ROWS,
  type AccountsBenchResult,
} from "./accounts.js";
import {
  benchFirstDays,
  benchGaps,
  benchOutage,
  firstDayReport,
  GAPS_RUNS_HEADER,
  gapsReport,
  gapsRunLine,
  outageReport,
  type GapsBenchResult,
} from "./sync-gaps.js";

const { values } = parseArgs({
  options: {
    only: { type: "string" },
    rows: { type: "string" },
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
// --rows: some ingest rows only (say c,p for the A/B of tracing off); all by default.
const ingestRows = values.rows?.split(",").map((k) => k.trim());
const unknownRow = ingestRows?.find((k) => !SERVERS.some((s) => s.key === k));
if (unknownRow !== undefined) {
  process.stderr.write(`bench: --rows takes ingest row keys (${SERVERS.map((s) => s.key).join(",")}), got "${unknownRow}"\n`);
  process.exit(2);
}
const want = (part: string) => !values.only || values.only.split(",").includes(part);
const log = (s: string) => process.stderr.write(`${s}\n`);
const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

// Only the ingest, e2e and memory parts drive load with wrk; the sync parts do not need it.
if (want("ingest") || want("e2e") || want("memory")) assertWrk();
// A Redis of the bench's own (AOF on, as production), unless REDIS_URL is given.
const redis = await ensureRedis(process.env.BENCH_REDIS_URL);
let embeddedMemoryRun: EmbeddedMemoryRow | undefined;
const results: Record<string, unknown> = { at: new Date().toISOString(), node: process.version, cpus: cpus().length };
// The code measured: the commit at the start, "+changes" when the tracked files differed from it then.
const measuredTree =
  (spawnSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).stdout.trim() || "?") +
  (spawnSync("git", ["status", "--porcelain", "--untracked-files=no"], { encoding: "utf8" }).stdout.trim() ? "+changes" : "");
// The table goes to stdout and to bench/results/latest.md (committed); the figures to latest.json.
const md: string[] = [
  `# npm run bench — ${String(results.at)}`,
  "",
  `Node ${process.version}, ${cpus().length} CPUs, \`npm run bench -- ${process.argv.slice(2).join(" ")}\``,
  "",
];
const out = (...lines: string[]) => {
  for (const l of lines) console.log(l);
  md.push(...lines, "");
};
// The README's performance section: the ingest and end-to-end tables of a run that made both.
const readme: string[] = [];
// The README's sync section: the tables of a run that made the sync part.
// The sync parts' results, typed: their sections and runs' lines are written from them at the end.
let syncRun: SyncBenchResult | undefined;
let gapsRun: GapsBenchResult | undefined;
let syncFullRun: Awaited<ReturnType<typeof benchLive>> | undefined;
let accountsRun: AccountsBenchResult | undefined;
// The peer the end-to-end run compares against: the best of the ingest table, else the Hono tutorial.
let bestPeerKey: IngestKey = "f";
const E2E_PEERS: Partial<Record<IngestKey, EndToEndPair>> = {
  d: {
    name: "Express peer + plain BullMQ Worker, no-op processor",
    receiver: "bench/servers/express-peer.ts",
    worker: "bench/servers/peer-worker.ts",
  },
  e: {
    name: "octokit peer (node:http) + plain BullMQ Worker, no-op processor",
    receiver: "bench/servers/octokit-peer.ts",
    worker: "bench/servers/peer-worker.ts",
  },
  f: {
    name: "Hono tutorial peer + plain BullMQ Worker, no-op processor",
    receiver: "bench/servers/hono-peer.ts",
    worker: "bench/servers/peer-worker.ts",
  },
};
/**
 * Our web and worker processes share a PostgreSQL server (the embedded store admits one process):
 * BENCH_DATABASE_URL, else a throwaway server from the installed binaries with production
 * durability (fsync and synchronous_commit on), as Redis runs with AOF.
 */
async function benchDatabase(): Promise<BenchDatabase & { server?: PostgresServer }> {
  if (process.env.BENCH_DATABASE_URL)
    return { url: process.env.BENCH_DATABASE_URL, label: "PostgreSQL at BENCH_DATABASE_URL (its CPU not measured)" };
  const bin = await findPostgresBin();
  const server = await startPostgresServer(bin, { durable: true });
  const pid = Number(readFileSync(join(server.dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
  const version = /\d+(\.\d+)?/.exec(spawnSync(join(bin, "postgres"), ["--version"], { encoding: "utf8" }).stdout)?.[0] ?? "";
  return {
    url: server.url,
    pid,
    server,
    label: `PostgreSQL ${version} server started by the bench on loopback (fsync and synchronous_commit on, defaults otherwise)`,
  };
}

/** Runs a sync part over a fresh bench database (benchDatabase) and the bench's Redis; a throwaway server is destroyed after. */
async function onBenchDatabase<T>(part: (targets: { redisUrl: string; databaseUrl: string }) => Promise<T>): Promise<T> {
  const database = await benchDatabase();
  try {
    return await part({ redisUrl: redis.url, databaseUrl: database.url });
  } finally {
    await database.server?.destroy();
  }
}

try {
  if (want("ingest")) {
    const rows = await benchIngest({
      redisUrl: redis.url,
      rounds,
      seconds,
      warmupSeconds: 3,
      connections: 50,
      log,
      ...(ingestRows ? { only: ingestRows as IngestKey[] } : {}),
    });
    const report = ingestReport(rows, { rounds, seconds, connections: 50 });
    results.ingest = { rows, ratios: report.ratios, bestPeer: report.best };
    if (!ingestRows) bestPeerKey = report.best;
    out("## Ingest", "", ...report.lines);
    readme.push(...report.lines, "");
  }
  if (want("e2e")) {
    const peer = E2E_PEERS[bestPeerKey] ?? E2E_PEERS.f!;
    const concurrency = 10;
    const pairs = [OURS_E2E, peer];
    const database = await benchDatabase();
    let runs;
    try {
      runs = await benchEndToEnd({
        redisUrl: redis.url,
        pairs,
        rounds,
        seconds,
        warmupSeconds: 3,
        connections: 50,
        concurrency,
        database,
        log,
      });
    } finally {
      await database.server?.destroy();
    }
    const report = endToEndReport(pairs, runs, { rounds, seconds, concurrency, database: database.label });
    results.e2e = { pairs, runs, ratio: report.ratio };
    out("## End to end", "", ...report.lines);
    readme.push(...report.lines);
  }
  if (want("worker")) {
    log("worker: draining 20,000 review.created jobs");
    const w = await benchWorker({ redisUrl: redis.url, jobs: 20_000, concurrency: 50 });
    results.worker = w;
    out(
      `Worker: ${fmt(w.jobs)} review.created jobs (no API call, one mirror write each), concurrency 50: ${fmt(w.jobsPerSecond)} jobs/s (${fmt(w.seconds, 1)} s)`,
    );
  }
  if (want("sync")) {
    log("sync: issue 22's workload (about 8 minutes)");
    const r = await onBenchDatabase((targets) => benchSync({ ...targets, log }));
    results.sync = syncRun = r;
    out("## Sync", "", ...syncReport(r));
  }
  if (want("sync") || want("sync-gaps")) {
    log(
      "sync-gaps: a first day at 20,000 orders (nothing else running, then 1 event/s), a 2-minute outage at 20,000 and 100,000 (about 25 minutes)",
    );
    const r = await onBenchDatabase((targets) => benchGaps({ ...targets, log }));
    results.syncGaps = gapsRun = r;
    out("## Sync: first day and outages", "", ...gapsReport(r));
  }
  // The first day alone (about 10 minutes) with where its calls went: for trying a change to how
  // the budget is spent. Printed only; the docs and the runs' history take whole sync-gaps runs.
  if (values.only?.split(",").includes("sync-first-day")) {
    log("sync-first-day: a first day at 20,000 orders, with nothing else running and with 1 event/s (about 10 minutes)");
    const runs = await onBenchDatabase((targets) => benchFirstDays(targets, log));
    results.syncFirstDay = runs;
    out("## Sync: first day", "", ...runs.flatMap((r) => [...firstDayReport(r, true), ""]));
  }
  // The live row alone (about 5 minutes): the sync part's freshness under 7 events/s at 20,000
  // orders, for trying a change to how refreshes are paced (BENCH_SYNC_ENV). Printed only.
  if (values.only?.split(",").includes("sync-live")) {
    log("sync-live: freshness under 7 events/s over 20,000 orders of history for 150 s (about 5 minutes)");
    const r = await onBenchDatabase((targets) => benchLive(targets, { historyOrders: 20_000, eventsPerSecond: 7, seconds: 150 }, log));
    results.syncLive = r;
    const f = r.freshness;
    out(
      "## Sync: freshness under live traffic",
      "",
      `${process.env.BENCH_SYNC_ENV ? `With \`${process.env.BENCH_SYNC_ENV}\`: ` : ""}change → change event p50 ${fmt(f.p50, 1)} s, p90 ${fmt(f.p90, 1)} s, **p99 ${fmt(f.p99, 1)} s** (max ${fmt(f.max, 1)} s); ${f.changes} changes, ${f.lost} lost, ${f.rateLimited} 429s, ${fmt(f.callsPerMinute)} calls/min (${Object.entries(
        f.callsPerMinuteByClass,
      )
        .map(([c, n]) => `${c} ${fmt(n, 1)}`)
        .join(", ")}).`,
      "",
      `By change (p50 / p99): ${f.freshnessByChange.map(([type, v]) => `${type} ${fmt(v.p50, 1)} / ${fmt(v.p99, 1)} s (${v.changes})`).join("; ")}.`,
    );
  }
  // One outage row alone (about 10 minutes at 100,000 orders, most of it the import): for trying a
  // change to the catch-up. BENCH_OUTAGE_ORDERS picks the history (default 100,000). Printed only.
  if (values.only?.split(",").includes("sync-outage")) {
    const historyOrders = Number(process.env.BENCH_OUTAGE_ORDERS ?? 100_000);
    log(`sync-outage: a 2-minute outage at ${fmt(historyOrders)} orders (about 10 minutes)`);
    const r = await onBenchDatabase((targets) => benchOutage(targets, { historyOrders, outageSeconds: 120, seed: 29 }, log));
    results.syncOutage = r;
    out("## Sync: an outage", "", ...outageReport([r]));
  }
  // Issue 53's figure: an upstream down and a refused key, to the notification (about 6 minutes,
  // most of it the active tier's schedule): run only when asked for by name.
  if (values.only?.split(",").includes("alerts")) {
    log("alerts: the time from an upstream outage and from a refused key to the notification, with the defaults (about 6 minutes)");
    const rows = await onBenchDatabase((targets) => benchAlerts(targets, log));
    results.alerts = rows;
    out("## Alerts: from a fault to the notification", "", ...alertsReport(rows, fmt));
  }
  // Long (the pass reads every record at the full class's share): run only when asked for by name.
  if (values.only?.split(",").includes("sync-full")) {
    log("sync-full: a full pass over 100,000 orders of history under live traffic at 3.5 events/s (about an hour)");
    const r = await onBenchDatabase((targets) =>
      benchLive(targets, { historyOrders: 100_000, eventsPerSecond: 3.5, seconds: 90 * 60, untilFullPass: true, seed: 26 }, log),
    );
    results.syncFull = syncFullRun = r;
    out("## Sync: a full pass under live traffic", "", ...syncFullReport(r));
  }
  // Many accounts (issue 41; about 15 minutes): run only when asked for by name. BENCH_ACCOUNTS_ROWS=1,3 runs some rows.
  if (values.only?.split(",").includes("accounts")) {
    const rows = accountsRows(process.env.BENCH_ACCOUNTS_ROWS);
    log(
      `accounts: rows ${rows.join(",")} (20 first days at once; 1,000 accounts; a flood beside a quiet company), each over a fresh PostgreSQL server`,
    );
    const r = await benchAccounts({
      redisUrl: redis.url,
      rows,
      log,
      database: async () => {
        const d = await benchDatabase();
        return { url: d.url, ...(d.pid === undefined ? {} : { pid: d.pid }), destroy: async () => await d.server?.destroy() };
      },
    });
    results.accounts = accountsRun = r;
    const sections = accountsSections(r);
    out("## Accounts", "", ...r.rows.flatMap((row) => [...(sections[row] ?? []), ""]));
  }
  if (want("memory")) {
    log(`memory: ${memorySeconds} s of sustained load`);
    const m = await benchMemory({ redisUrl: redis.url, seconds: memorySeconds, connections: 20, log });
    results.memory = m;
    out(
      `Memory (ROLE=all, ${memorySeconds} s at ${fmt(m.rps)} req/s, 20 connections): RSS ${fmt(m.rssBeforeMiB, 1)} MiB before, ${fmt(m.rssPeakMiB, 1)} MiB peak, ${fmt(m.rssAfterMiB, 1)} MiB 15 s after (${fmt(m.afterVsBefore * 100 - 100, 1)} % vs before; target within 20 %)`,
    );
  }
  if (want("embedded-memory")) {
    log("embedded memory: the embedded default through start, 2,000 deliveries and a 5,000-order first import");
    results.embeddedMemory = embeddedMemoryRun = await benchEmbeddedMemory({ redisUrl: redis.url, log });
    out("## Memory of the embedded default", "", ...embeddedMemoryReport(embeddedMemoryRun));
  }
} finally {
  await redis.started?.destroy();
}
// A run of the sync part alone keeps its own files, so it does not wipe the ingest and e2e tables.
const resultsName = [
  "sync",
  "sync-full",
  "sync-gaps",
  "sync-first-day",
  "sync-outage",
  "sync-live",
  "alerts",
  "embedded-memory",
  "accounts",
].includes(values.only ?? "")
  ? (values.only ?? "")
  : "latest";
mkdirSync("bench/results", { recursive: true });
// The accounts part keeps each row's latest section (a run of some rows leaves the others as they were).
if (resultsName !== "accounts") writeFileSync(`bench/results/${resultsName}.md`, md.join("\n"));
writeFileSync(`bench/results/${resultsName}.json`, JSON.stringify(results, null, 2));
console.log(
  resultsName === "accounts"
    ? "\nwritten: bench/results/accounts.json (every run)"
    : `\nwritten: bench/results/${resultsName}.md (table), bench/results/${resultsName}.json (every run)`,
);
function embeddedMemoryReport(m: EmbeddedMemoryRow): string[] {
  return [
    "Peak memory of the whole service (ROLE=all, no DATABASE_URL): the sum of the PSS of the service process and of every PostgreSQL process it started, per phase. Target: under 300 MB (286 MiB).",
    "",
    "| phase | peak MiB |",
    "|---|---:|",
    `| start (initdb, migrations) | ${fmt(m.startMiB, 1)} |`,
    `| ${fmt(m.deliveries)} deliveries, handled | ${fmt(m.deliveriesMiB, 1)} |`,
    `| first import of ${fmt(m.ordersImported)} orders (backfill, ${fmt(m.importSeconds)} s) | ${fmt(m.importMiB, 1)} |`,
    `| **whole run** | **${fmt(m.peakMiB, 1)}** |`,
    "",
    `Of which at their peaks: the service process ${fmt(m.servicePeakRssMiB, 1)} MiB RSS, PostgreSQL ${fmt(m.postgresPeakMiB, 1)} MiB PSS.`,
  ];
}

/** Appends a run's headline line to a runs' history (bench/results/*-runs.md), which starts with its header. */
function appendRunLine(path: string, header: string[], line: string) {
  if (!existsSync(path)) writeFileSync(path, `${header.join("\n")}\n`);
  appendFileSync(path, `${line}\n`);
  console.log(`appended: ${path}`);
}
if (syncRun) {
  const section = [
    `Latest \`npm run bench -- --only sync\` (${String(results.at).slice(0, 10)}, Node ${process.version}, ${cpus().length} CPUs):`,
    "",
    ...syncReport(syncRun),
  ];
  if (writeReadmeSection("README.md", section, "sync")) console.log("written: README.md (sync section)");
  if (writeReadmeSection("bench/README.md", section, "sync")) console.log("written: bench/README.md (sync section)");
  appendRunLine("bench/results/sync-runs.md", SYNC_RUNS_HEADER, syncRunLine(syncRun, String(results.at), measuredTree));
}
if (gapsRun) {
  const section = [
    `Latest \`npm run bench -- --only sync-gaps\` (${String(results.at).slice(0, 10)}, Node ${process.version}, ${cpus().length} CPUs):`,
    "",
    ...gapsReport(gapsRun),
  ];
  if (writeReadmeSection("bench/README.md", section, "sync-gaps")) console.log("written: bench/README.md (sync-gaps section)");
  appendRunLine("bench/results/sync-gaps-runs.md", GAPS_RUNS_HEADER, gapsRunLine(gapsRun, String(results.at), measuredTree));
}
if (syncFullRun) {
  const section = [
    `Latest \`npm run bench -- --only sync-full\` (${String(results.at).slice(0, 10)}, Node ${process.version}, ${cpus().length} CPUs):`,
    "",
    ...syncFullReport(syncFullRun),
  ];
  if (writeReadmeSection("bench/README.md", section, "sync-full")) console.log("written: bench/README.md (sync-full section)");
  appendRunLine("bench/results/sync-full-runs.md", SYNC_FULL_RUNS_HEADER, syncFullRunLine(syncFullRun, String(results.at), measuredTree));
}
// A toy-size run (BENCH_ACCOUNTS_SMALL) checks the bench itself: its figures mean nothing, so it writes no results file.
if (accountsRun && process.env.BENCH_ACCOUNTS_SMALL === "1") console.log("BENCH_ACCOUNTS_SMALL: the results files are left as they were");
else if (accountsRun) {
  const path = "bench/results/accounts.md";
  if (!existsSync(path))
    writeFileSync(
      path,
      [
        "# Accounts (`npm run bench -- --only accounts`)",
        "",
        "Written by the bench (bench/accounts.ts), never by hand: each row's latest run, with when and at which commit it ran. The runs' history is [accounts-runs.md](accounts-runs.md).",
        "",
        ...ACCOUNTS_ROWS.flatMap((row) => [
          `<!-- bench:accounts-${row}:start -->`,
          "Not run yet.",
          `<!-- bench:accounts-${row}:end -->`,
          "",
        ]),
      ].join("\n"),
    );
  const sections = accountsSections(accountsRun);
  // Settings tried (BENCH_ACCOUNTS_ENV) are named beside the commit, so such a run is never read as the defaults'.
  const tried =
    (process.env.BENCH_ACCOUNTS_ENV ? ` with \`${process.env.BENCH_ACCOUNTS_ENV}\`` : "") +
    (process.env.BENCH_CPU_PROF ? " (CPU profile on)" : "") +
    (process.env.BENCH_HEAP_SNAPSHOT ? " (heap snapshots on)" : "");
  for (const row of accountsRun.rows) {
    const head = `Row ${row}, run ${String(results.at).slice(0, 16).replace("T", " ")} UTC at \`${measuredTree}\`${tried} (Node ${process.version}, ${cpus().length} CPUs; the whole run of rows ${accountsRun.rows.join(",")} took ${fmt(accountsRun.seconds / 60, 1)} min):`;
    writeReadmeSection(path, [head, "", ...(sections[row] ?? [])], `accounts-${row}`);
  }
  console.log(`written: ${path} (rows ${accountsRun.rows.join(",")})`);
  appendRunLine(
    "bench/results/accounts-runs.md",
    ACCOUNTS_RUNS_HEADER,
    accountsRunLine(accountsRun, String(results.at), `${measuredTree}${tried}`),
  );
}
if (embeddedMemoryRun) {
  const m = embeddedMemoryRun;
  appendRunLine(
    "bench/results/embedded-memory-runs.md",
    [
      "# Memory of the embedded default, run by run (`npm run bench -- --only embedded-memory`)",
      "",
      "Peak PSS of the service and its PostgreSQL processes, MiB (target: under 300 MB = 286 MiB).",
      "",
      "| at | code | start | 2,000 deliveries | 5,000-order import | peak | service RSS peak | PostgreSQL peak | import s |",
      "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ],
    `| ${String(results.at)} | ${measuredTree} | ${fmt(m.startMiB)} | ${fmt(m.deliveriesMiB)} | ${fmt(m.importMiB)} | ${fmt(m.peakMiB)} | ${fmt(m.servicePeakRssMiB)} | ${fmt(m.postgresPeakMiB)} | ${fmt(m.importSeconds)} |`,
  );
}
if (want("ingest") && want("e2e") && readme.length > 0) {
  const head = `Latest \`npm run bench -- ${process.argv.slice(2).join(" ")}\` (${String(results.at).slice(0, 10)}, Node ${process.version}, ${cpus().length} CPUs):`;
  if (writeReadmeSection("README.md", [head, "", ...readme])) console.log("written: README.md (performance section)");
}
