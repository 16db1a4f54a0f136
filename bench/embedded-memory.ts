import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSandbox } from "../src/sandbox/index.js";
import { freePort } from "../src/redis/local-server.js";
import { BENCH_SECRET } from "./lib/pool.js";

// Issue 42's target: the embedded default (ROLE=all, no DATABASE_URL) under 300 MB through its
// start, 2,000 deliveries and a 5,000-order first import. Memory is the whole process tree's PSS
// (the service and every PostgreSQL process it started): PSS splits shared pages (the server's
// shared buffers) between the processes mapping them, so the sum counts each page once, as a
// container's memory limit does. The service's own RSS is given beside it. The service runs as
// the image runs it: `node dist/bin/cli.js serve`, built first (tsx would add its compiler).

export interface EmbeddedMemoryRow {
  /** Peak of the tree's PSS sum, MiB, per phase. */
  startMiB: number;
  deliveriesMiB: number;
  importMiB: number;
  peakMiB: number;
  /** The service process alone (RSS), at its peak. */
  servicePeakRssMiB: number;
  /** PostgreSQL's processes (PSS sum), at their peak. */
  postgresPeakMiB: number;
  deliveries: number;
  ordersImported: number;
  importSeconds: number;
}

const ORDERS = 5000;
const DELIVERIES = 2000;
const ADMIN_TOKEN = "bench-admin-token-0123456789";

/** Proportional set size of one process in MiB (0 once it has exited). */
function pssMiB(pid: number): number {
  try {
    return Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"))?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

/** Every descendant of `pid` (the postmaster is the service's child, its backends the postmaster's). */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // exited meanwhile
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(pid);
  return out;
}

/** The tree's memory now: the service's RSS and PSS, and its descendants' PSS. */
function sample(pid: number): { service: number; servicePss: number; postgres: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const service = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
  const postgres = descendants(pid).reduce((sum, p) => sum + pssMiB(p), 0);
  return { service, servicePss: pssMiB(pid), postgres };
}

async function metric(url: string, name: string, match: (labels: string) => boolean): Promise<number> {
  const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
  let total = 0;
  for (const line of text.split("\n")) {
    const m = /^(\w+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (m?.[1] === name && match(m[2] ?? "")) total += Number(m[3]);
  }
  return total;
}

async function until(what: string, check: () => Promise<boolean>, seconds: number): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`embedded memory: ${what} did not happen within ${seconds} s`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

function backfill(env: Record<string, string>): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["dist/bin/cli.js", "backfill", "--json"], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let err = "";
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`backfill exited ${code}: ${err.slice(-400)}`))));
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  await exited;
  clearTimeout(timer);
}

export async function benchEmbeddedMemory(opts: { redisUrl: string; log: (s: string) => void }): Promise<EmbeddedMemoryRow> {
  const sandbox = createSandbox({ seed: 42, restaurants: 40, history: { orders: ORDERS, days: 60 } });
  const apiUrl = await sandbox.listen();
  const dataDir = mkdtempSync(join(tmpdir(), "svc-bench-embedded-"));
  const env: Record<string, string> = {
    ROLE: "all",
    REDIS_URL: opts.redisUrl,
    QUEUE_PREFIX: `bench-em-${randomUUID().slice(0, 8)}`,
    DATA_DIR: dataDir,
    DATABASE_URL: "",
    API_BASE_URL: apiUrl,
    API_KEY: sandbox.apiKey,
    ADMIN_TOKEN,
    LOG_LEVEL: "warn",
  };
  const phase = { start: 0, deliveries: 0, import: 0 };
  let current: keyof typeof phase = "start";
  let servicePeak = 0;
  let postgresPeak = 0;
  let pid = 0;
  const take = () => {
    if (!pid) return;
    try {
      const s = sample(pid);
      phase[current] = Math.max(phase[current], s.servicePss + s.postgres);
      servicePeak = Math.max(servicePeak, s.service);
      postgresPeak = Math.max(postgresPeak, s.postgres);
    } catch {
      // the service exited: the phase's figures stand
    }
  };
  const sampler = setInterval(take, 200);
  const build = spawnSync("npm", ["run", "build"], { encoding: "utf8" });
  if (build.status !== 0) throw new Error(`embedded memory: npm run build failed: ${build.stderr.slice(-400)}`);
  env.PORT = String(await freePort());
  env.HOST = "127.0.0.1";
  env.SIGNING_SECRET = BENCH_SECRET;
  // BENCH_SERVICE_NODE_OPTIONS: Node flags for the service alone (a heap cap to try, say).
  const nodeOptions = process.env.BENCH_SERVICE_NODE_OPTIONS;
  const child = spawn(process.execPath, ["dist/bin/cli.js", "serve"], {
    env: { ...process.env, ...env, ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}) },
    stdio: ["ignore", "ignore", "pipe"],
  });
  pid = child.pid ?? 0;
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
  const url = `http://127.0.0.1:${env.PORT}`;
  await until(
    "the service's start",
    async () => {
      if (child.exitCode !== null) throw new Error(`embedded memory: the service exited ${child.exitCode}: ${stderr}`);
      return (await fetch(`${url}/readyz`).catch(() => undefined))?.status === 200;
    },
    120,
  );
  const proc = { url, stop: () => stopChild(child) };
  take();
  try {
    current = "deliveries";
    sandbox.addWebhook({ url: `${proc.url}/webhooks`, secret: BENCH_SECRET });
    // Half new orders, half their first move: each a signed delivery the sandbox sends, as upstream would.
    const created = Array.from({ length: DELIVERIES / 2 }, () => sandbox.actions.createOrder());
    for (const order of created) sandbox.actions.updateOrderStatus(order.id, "CONFIRMED");
    opts.log(`embedded memory: ${DELIVERIES} deliveries sent, waiting for the worker`);
    await until(
      `${DELIVERIES} deliveries handled`,
      async () =>
        (await metric(proc.url, "svc_jobs_total", (l) => l.includes('queue="events"') && l.includes('outcome="completed"'))) >= DELIVERIES,
      600,
    );
    current = "import";
    const started = performance.now();
    await backfill(env);
    await until(
      "the first import",
      async () =>
        (await metric(proc.url, "svc_jobs_total", (l) => l.includes('name="backfill"') && l.includes('outcome="completed"'))) >= 1,
      900,
    );
    const importSeconds = (performance.now() - started) / 1000;
    take();
    return {
      startMiB: phase.start,
      deliveriesMiB: phase.deliveries,
      importMiB: phase.import,
      peakMiB: Math.max(phase.start, phase.deliveries, phase.import),
      servicePeakRssMiB: servicePeak,
      postgresPeakMiB: postgresPeak,
      deliveries: DELIVERIES,
      ordersImported: sandbox.state.orders().length,
      importSeconds,
    };
  } finally {
    clearInterval(sampler);
    await proc.stop();
    await sandbox.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
