import { createWriteStream, readFileSync } from "node:fs";
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { Queue } from "bullmq";
import { Hono } from "hono";
import { Redis } from "ioredis";
import pg from "pg";
import pino from "pino";
import { loadConfig, secretsOf } from "../src/config/config.js";
import { createLogger } from "../src/logging/logger.js";
import { EVENTS_QUEUE } from "../src/queue/events-queue.js";
import { createSandboxCompanies, type SandboxCompanies } from "../src/sandbox/companies.js";
import { serveApp, type Sandbox } from "../src/sandbox/index.js";
import type { TrafficChange } from "../src/sandbox/traffic.js";
import { createService } from "../src/service.js";
import { RESOURCES, SYNCED_KINDS } from "../src/sync/resources.js";
import type { EventHandlers } from "../src/worker/handlers.js";
import { waitFor } from "../test/helpers/wait-for.js";
import { processCpuSeconds, processTreeCpuSeconds } from "./lib/cpu.js";
import { profileOf, summarizeCpuProfile, type CpuProfileSummary } from "./lib/cpu-profile.js";
import { heapGrowth, heapSnapshotOptions, summarizeHeapSnapshot, takeHeapSnapshot } from "./lib/heap-snapshot.js";
import { BENCH_SECRET } from "./lib/pool.js";
import { startServerProcess, type ServerProcess } from "./lib/server-process.js";
import { PHYSICAL_RECORDS_PER_MINUTE } from "./sync-gaps.js";
import { backfill, describeRead, percentile, RESTAURANTS, reachedAt, type SeenChange } from "./sync.js";

// Issue 41's rows for many accounts (docs/accounts.md): 20 companies' first days at once, 1,000
// small accounts (their imports, then their idle cost), and one company's flood beside a quiet
// one. Measured through the public surface only: the env, `POST /accounts`, the webhooks, the
// mirror's tables, the change events' handlers and the sandbox's request logs, so the same bench
// runs whatever the sync's internals become. Figures are reported, never asserted.

export type AccountsRow = 1 | 2 | 3;
export const ACCOUNTS_ROWS: readonly AccountsRow[] = [1, 2, 3];

/** A PostgreSQL server for one row (a fresh one each, so a row never reads another's tables). */
export interface RowDatabase {
  url: string;
  /** The postmaster's pid, when the bench started it: its CPU is measured. */
  pid?: number;
  destroy(): Promise<void>;
}

export interface AccountsBenchTargets {
  redisUrl: string;
  database: () => Promise<RowDatabase>;
  log: (s: string) => void;
}

const ADMIN_TOKEN = "bench-accounts-admin-token-0123";
const SECRETS_KEY = randomBytes(32).toString("base64");
const WINDOW_MS = 60_000;
const keyHash = (key: string) => createHash("sha256").update(key).digest("hex").slice(0, 12);
const newKey = () => `svc_live_${randomBytes(16).toString("hex")}`;
const newSecret = () => `whsec_${randomBytes(18).toString("hex")}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const accountIdOf = (i: number) => `co-${String(i).padStart(4, "0")}`;

// --- What every row shares: the service as its own process, registering accounts, reading the
// mirror and the sandbox's logs, and where the machine's CPU went.

/** Names for one row's schema and queue prefix (fresh, so its Redis keys are its own). */
function rowNames(row: AccountsRow) {
  const id = randomUUID().replace(/-/g, "").slice(0, 8);
  return { schema: `bench_acct${row}_${id}`, prefix: `bench-acct${row}-${id}` };
}

/**
 * What a row reads the service's state through: a PostgreSQL client, and the events queue on a
 * Redis connection of its own (BullMQ leaves a given connection open); `close` ends both.
 */
async function openRowProbes(databaseUrl: string, redis: Redis, prefix: string) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const connection = redis.duplicate();
  const events = new Queue(EVENTS_QUEUE, { connection, prefix });
  return {
    client,
    events,
    close: async () => {
      await events.close();
      connection.disconnect();
      await client.end();
    },
  };
}

/** The service's settings a row starts it with (the env company is `API_KEY`'s). */
function serviceEnv(opts: { redisUrl: string; databaseUrl: string; schema: string; prefix: string; apiUrl: string; apiKey: string }) {
  return {
    REDIS_URL: opts.redisUrl,
    DATABASE_URL: opts.databaseUrl,
    DATABASE_SCHEMA: opts.schema,
    QUEUE_PREFIX: opts.prefix,
    API_BASE_URL: opts.apiUrl,
    API_KEY: opts.apiKey,
    SIGNING_SECRET: BENCH_SECRET,
    ADMIN_TOKEN,
    SECRETS_KEY,
    LOG_LEVEL: "warn",
  };
}

/** process.memoryUsage() of the service as it last reported it (accounts-service.ts), MiB. */
export interface ServiceMemory {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

interface ServiceChild extends ServerProcess {
  pid: number;
  logPath: string;
  /** Its last memory report, and the report at its highest RSS. */
  memory(): { last?: ServiceMemory; atPeak?: ServiceMemory };
  /** Throws once the process has exited (a wait on its work would otherwise wait out its timeout). */
  assertAlive(): void;
}

/**
 * The service as deployed, its own process (`bench/servers/accounts-service.ts`, ROLE=all unless
 * `role` says otherwise, as `serve` builds it), so its CPU and RSS are its own and not the
 * sandbox's. Its log lines (warn and above) go to a file in the temp directory.
 */
async function startServiceChild(env: Record<string, string>, name: string, role = "all"): Promise<ServiceChild> {
  const proc = await startServerProcess("bench/servers/accounts-service.ts", { ...env, ROLE: role }, { startMs: 120_000 });
  const logPath = join(tmpdir(), `svc-bench-${name}-${proc.child.pid}.log`);
  const file = createWriteStream(logPath);
  let last: ServiceMemory | undefined;
  let atPeak: ServiceMemory | undefined;
  let partial = "";
  proc.child.stderr?.on("data", (d: Buffer) => {
    const text = partial + d.toString();
    const lines = text.split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) {
      if (!line.startsWith("MEM ")) {
        file.write(`${line}\n`);
        continue;
      }
      const m = JSON.parse(line.slice(4)) as Record<keyof ServiceMemory, number>;
      last = Object.fromEntries(Object.entries(m).map(([k, v]) => [k, v / 1024 / 1024])) as unknown as ServiceMemory;
      if (!atPeak || last.rss >= atPeak.rss) atPeak = last;
    }
  });
  let exit: string | undefined;
  let stopping = false;
  proc.child.once("exit", (code, signal) => {
    exit = `${signal ? `signal ${signal}` : `code ${code}`} at ${new Date().toISOString()}`;
    file.end(`\n[bench] the service exited (${exit})\n`);
  });
  return {
    ...proc,
    pid: proc.child.pid ?? 0,
    logPath,
    memory: () => ({ ...(last ? { last } : {}), ...(atPeak ? { atPeak } : {}) }),
    assertAlive() {
      if (exit !== undefined && !stopping) throw new Error(`the service (pid ${proc.child.pid}) exited (${exit}); its log: ${logPath}`);
    },
    stop() {
      stopping = true;
      return proc.stop();
    },
  };
}

/** `POST /accounts` as an operator sends it; throws on anything but 201. */
async function register(url: string, id: string, apiKey: string, signingSecret: string): Promise<void> {
  const res = await fetch(`${url}/accounts`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ id, apiKey, signingSecret }),
  });
  if (res.status !== 201) throw new Error(`POST /accounts ${id}: ${res.status} ${await res.text()}`);
}

/** The records a company's mirror must hold once its first import is done. */
interface Expected {
  orders: number;
  bookings: number;
  menuItems: number;
}
const expectedOf = (s: Sandbox): Expected => ({
  orders: s.state.orders().length,
  bookings: s.state.bookings().length,
  menuItems: s.state.menuItems().length,
});
const recordsOf = (e: Expected) => e.orders + e.bookings + e.menuItems;

/** Rows per account in the row's mirror tables, read in one round trip. */
async function mirrorCounts(client: pg.Client, schema: string): Promise<Map<string, Expected>> {
  const { rows } = await client.query<{ account_id: string; kind: string; n: string }>(
    `select account_id, 'orders' as kind, count(*) as n from "${schema}".orders group by account_id
     union all select account_id, 'bookings', count(*) from "${schema}".bookings group by account_id
     union all select account_id, 'menuItems', count(*) from "${schema}".menu_items group by account_id`,
  );
  const by = new Map<string, Expected>();
  for (const r of rows) {
    const e = by.get(r.account_id) ?? { orders: 0, bookings: 0, menuItems: 0 };
    e[r.kind as keyof Expected] = Number(r.n);
    by.set(r.account_id, e);
  }
  return by;
}

/** The full tier's first passes per account: when each began and when its last kind completed. */
async function firstPasses(client: pg.Client, schema: string): Promise<Map<string, { startedAt: number; completedAt: number | null }>> {
  const { rows } = await client.query<{ account_id: string; started: Date; completed: Date | null; kinds: string }>(
    `select account_id, min(pass_started_at) as started,
       case when count(pass_completed_at) = count(*) then max(pass_completed_at) end as completed, count(*) as kinds
     from "${schema}".sync_checkpoints where tier = 'full' group by account_id`,
  );
  return new Map(
    rows.map((r) => [
      r.account_id,
      {
        startedAt: r.started.getTime(),
        completedAt: r.completed && Number(r.kinds) === SYNCED_KINDS.length ? r.completed.getTime() : null,
      },
    ]),
  );
}

/**
 * Polls the mirror until every account holds what `expected` says (orders, bookings and menu
 * items; `ordersOnly` records when the orders alone are whole too), or `timeoutMs`. Resolves with
 * the time each account was first seen whole (poll time), by kind set.
 */
async function waitForMirrors(
  client: pg.Client,
  schema: string,
  expected: ReadonlyMap<string, Expected>,
  opts: { timeoutMs: number; intervalMs: number; log: (s: string) => void; what: string; service?: { assertAlive(): void } },
): Promise<{ whole: Map<string, number>; ordersWhole: Map<string, number>; last: Map<string, Expected> }> {
  const whole = new Map<string, number>();
  const ordersWhole = new Map<string, number>();
  const deadline = Date.now() + opts.timeoutMs;
  let lastLog = Date.now();
  let last = new Map<string, Expected>();
  while (whole.size < expected.size && Date.now() < deadline) {
    opts.service?.assertAlive();
    last = await mirrorCounts(client, schema);
    const now = Date.now();
    for (const [account, want] of expected) {
      const have = last.get(account);
      if (!have) continue;
      if (!ordersWhole.has(account) && have.orders >= want.orders) ordersWhole.set(account, now);
      if (!whole.has(account) && have.orders >= want.orders && have.bookings >= want.bookings && have.menuItems >= want.menuItems)
        whole.set(account, now);
    }
    if (now - lastLog > 30_000) {
      const held = [...expected.keys()].reduce(
        (n, account) => n + recordsOf(last.get(account) ?? { orders: 0, bookings: 0, menuItems: 0 }),
        0,
      );
      const wanted = [...expected.values()].reduce((n, e) => n + recordsOf(e), 0);
      opts.log(
        `${opts.what}: ${whole.size} of ${expected.size} mirrors whole, ${held.toLocaleString("en-US")} of ${wanted.toLocaleString("en-US")} records`,
      );
      lastLog = now;
    }
    if (whole.size < expected.size) await sleep(opts.intervalMs);
  }
  return { whole, ordersWhole, last };
}

/** A company's calls with its metered key: how many, 429s, and the most in any 60 s window. */
interface KeyCalls {
  calls: number;
  rateLimited: number;
  maxPerWindow: number;
  /** The calls' times (epoch ms), oldest first. */
  times: number[];
}
function keyCalls(s: Sandbox, from = 0, to?: number): KeyCalls {
  const metered = keyHash(s.apiKey);
  const log = s.requestLog.slice(from, to).filter((r) => r.keyHash === metered);
  const times = log.map((r) => r.at).sort((a, b) => a - b);
  return { calls: log.length, rateLimited: log.filter((r) => r.status === 429).length, maxPerWindow: maxInWindow(times, WINDOW_MS), times };
}

/** The most of `times` (sorted) inside any window of `ms`. */
export function maxInWindow(times: readonly number[], ms: number): number {
  let most = 0;
  let lo = 0;
  for (let hi = 0; hi < times.length; hi++) {
    while (times[hi]! - times[lo]! >= ms) lo++;
    most = Math.max(most, hi - lo + 1);
  }
  return most;
}

/** Calls by what they read (kind, filter, scope) over several companies' logs, most first. */
function callsByRead(companies: readonly Sandbox[], from?: readonly number[], to?: readonly number[]): [string, number][] {
  const by = new Map<string, number>();
  companies.forEach((s, i) => {
    const metered = keyHash(s.apiKey);
    for (const r of s.requestLog.slice(from?.[i] ?? 0, to?.[i])) {
      if (r.keyHash !== metered) continue;
      const read = describeRead(r.path, r.query);
      by.set(read, (by.get(read) ?? 0) + 1);
    }
  });
  return [...by].sort((a, b) => b[1] - a[1]);
}

/** Busy and total CPU ticks of the whole machine (/proc/stat's first line). */
function machineTicks(): { busy: number; total: number } {
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
  return { busy: total - idle, total };
}

/** CPU seconds used over a window, by process: the service, PostgreSQL, Redis, the bench itself (the sandbox), and the machine. */
export interface CpuSplit {
  seconds: number;
  service: number;
  postgres: number | null;
  redis: number;
  bench: number;
  /** The machine's busy share of all its cores over the window (other work on a shared box included). */
  machineBusy: number;
}

/** Starts measuring CPU; `end()` gives the split since the start. */
async function cpuWindow(redis: Redis, servicePid: number | undefined, postgresPid: number | undefined) {
  const redisSeconds = async () => {
    const info = await redis.info("cpu");
    const num = (re: RegExp) => Number(re.exec(info)?.[1] ?? 0);
    return num(/used_cpu_user:([\d.]+)/) + num(/used_cpu_sys:([\d.]+)/);
  };
  const safe = (f: () => number) => {
    try {
      return f();
    } catch {
      return 0;
    }
  };
  const read = async () => ({
    at: performance.now(),
    service: servicePid ? safe(() => processCpuSeconds(servicePid)) : 0,
    postgres: postgresPid ? safe(() => processTreeCpuSeconds(postgresPid)) : 0,
    redis: await redisSeconds(),
    bench: (process.cpuUsage().user + process.cpuUsage().system) / 1e6,
    machine: machineTicks(),
  });
  const start = await read();
  return {
    async end(): Promise<CpuSplit> {
      const now = await read();
      return {
        seconds: (now.at - start.at) / 1000,
        service: now.service - start.service,
        postgres: postgresPid ? now.postgres - start.postgres : null,
        redis: now.redis - start.redis,
        bench: now.bench - start.bench,
        machineBusy: (now.machine.busy - start.machine.busy) / Math.max(1, now.machine.total - start.machine.total),
      };
    },
  };
}

/** Samples a process's RSS every second: its peak, and the last sample. */
function rssSampler(proc: ServerProcess) {
  let peak = 0;
  let last = 0;
  const take = () => {
    try {
      last = proc.rssMiB();
      peak = Math.max(peak, last);
    } catch {
      // exited: the samples stand
    }
  };
  take();
  const timer = setInterval(take, 1000);
  return {
    now: () => (take(), last),
    peak: () => peak,
    stop: () => clearInterval(timer),
  };
}

/** Change events not yet handled: rows waiting in the outbox, and jobs waiting in the events queue. */
async function changeBacklog(client: pg.Client, schema: string, events: Queue): Promise<{ outbox: number; queued: number }> {
  const outbox = Number((await client.query<{ n: string }>(`select count(*) as n from "${schema}".change_outbox`)).rows[0]?.n ?? 0);
  const counts = await events.getJobCounts("waiting", "active", "prioritized", "delayed");
  return { outbox, queued: Object.values(counts).reduce((a, b) => a + b, 0) };
}

/** Deletes a row's Redis keys (its queues, budgets, dedup keys), so the next row's memory starts clean. */
async function dropPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
    cursor = next;
    if (keys.length > 0) await redis.unlink(...keys);
  } while (cursor !== "0");
}

async function connectedClients(redis: Redis): Promise<number> {
  return Number(/connected_clients:(\d+)/.exec(await redis.info("clients"))?.[1] ?? 0);
}

async function usedMemory(redis: Redis): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await redis.info("memory"))?.[1] ?? 0);
}

/** Runs `work` over `items`, `concurrency` at a time. */
async function inTurns<T>(items: readonly T[], concurrency: number, work: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) {
        const i = next++;
        await work(items[i]!, i);
      }
    }),
  );
}

/** The service's budget figures from its /metrics (every key summed): slots taken and mean wait for one, by class. */
export interface BudgetByClass {
  slots: Record<string, number>;
  meanWaitMs: Record<string, number>;
}
async function budgetByClass(url: string): Promise<BudgetByClass | undefined> {
  const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }).catch(() => undefined);
  if (res?.status !== 200) return undefined;
  const slots: Record<string, number> = {};
  const waitSum: Record<string, number> = {};
  const waitCount: Record<string, number> = {};
  for (const line of (await res.text()).split("\n")) {
    const m =
      /^(svc_upstream_budget_slots_total|svc_upstream_budget_wait_seconds_sum|svc_upstream_budget_wait_seconds_count)\{class="(\w+)"\} (\S+)$/.exec(
        line,
      );
    if (!m) continue;
    const into = m[1] === "svc_upstream_budget_slots_total" ? slots : m[1]!.endsWith("_sum") ? waitSum : waitCount;
    into[m[2]!] = Number(m[3]);
  }
  const meanWaitMs = Object.fromEntries(
    Object.keys(waitCount).map((c) => [c, ((waitSum[c] ?? 0) / Math.max(1, waitCount[c] ?? 0)) * 1000]),
  );
  return { slots, meanWaitMs };
}

/**
 * The companies' server with each answer's time taken (request in → response built), so a row
 * can tell the upstream's share of a call's round from the service's.
 */
async function listenTimed(sandboxes: SandboxCompanies): Promise<{ url: string; answerMs: number[]; close(): Promise<void> }> {
  const answerMs: number[] = [];
  const timed = new Hono();
  timed.all("*", async (c) => {
    const began = performance.now();
    const res = await sandboxes.app.fetch(c.req.raw, c.env);
    if (c.req.path.startsWith("/api/v1")) answerMs.push(performance.now() - began);
    return res;
  });
  const server = await serveApp(timed, 0, "127.0.0.1");
  return { url: server.url, answerMs, close: () => server.close() };
}

/** The time between a key's consecutive calls (ms), over the calls in [from, to]. */
function gapsOf(times: readonly number[], from: number, to: number): number[] {
  const within = times.filter((at) => at >= from && at <= to);
  return within.slice(1).map((at, i) => at - within[i]!);
}

/** p50 / p90 / p99 of `xs`. */
const quantiles = (xs: number[]): [number, number, number] => {
  const sorted = [...xs].sort((a, b) => a - b);
  return [percentile(sorted, 50), percentile(sorted, 90), percentile(sorted, 99)];
};

/**
 * Stops the service; with BENCH_CPU_PROF, by SIGINT (accounts-service.ts exits at once, and Node writes the
 * profile on the way out: a graceful stop that outlasts server-process.ts's 5 s would be
 * SIGKILLed, profile unwritten) and resolves with its profile, summarized.
 */
async function stopService(service: ServiceChild): Promise<CpuProfileSummary | undefined> {
  const dir = process.env.BENCH_CPU_PROF;
  if (dir && service.child.exitCode === null) {
    const exited = new Promise((resolve) => service.child.once("exit", resolve));
    service.child.kill("SIGINT");
    await Promise.race([exited, sleep(30_000)]);
  }
  await service.stop();
  const file = dir ? profileOf(dir, service.pid) : undefined;
  return file ? summarizeCpuProfile(file) : undefined;
}

// --- Row 1: 20 companies' first days at once.

export interface FirstDayCompany {
  account: string;
  records: number;
  /** Its first import: the full tier's first pass began (checkpoints) → its mirror whole. */
  seconds: number;
  recordsPerMinute: number;
  /** Its records/min against the companies' average, as a share (−0.1: 10 % below). */
  deviation: number;
  callsPerMinute: number;
  rateLimited: number;
  maxPerWindow: number;
  whole: boolean;
}

export interface FirstDaysResult {
  companies: number;
  ordersEach: number;
  /** From the first import's start (the env company's, as the service starts) to the last mirror whole. */
  seconds: number;
  records: number;
  recordsPerMinute: number;
  /** recordsPerMinute ÷ (companies × PHYSICAL_RECORDS_PER_MINUTE). */
  ofSummedLimit: number;
  maxDeviation: number;
  perCompany: FirstDayCompany[];
  rateLimited: number;
  maxPerWindow: number;
  callsByRead: [string, number][];
  cpu: CpuSplit;
  serviceRssPeakMiB: number;
  serviceRssEndMiB: number;
  /** Change events of the imports not yet handled when the last mirror was whole. */
  backlogAtEnd: { outbox: number; queued: number };
  /** Seconds from the service's start until the last registration answered. */
  registrationSeconds: number;
  /** A key's consecutive calls during its import, ms apart: p50 / p90 / p99 over every key (the budget's pace is 509 ms). */
  callGapMs: [number, number, number];
  /** The sandbox's answer to a call (request in → response built), ms: p50 / p90 / p99. */
  answerMs: [number, number, number];
  /** Where the service's CPU went (BENCH_CPU_PROF set). */
  profile?: CpuProfileSummary;
  /** Slots by budget class and the mean wait for one (the service's metrics, every key summed). */
  budget?: BudgetByClass;
  allWhole: boolean;
  logPath: string;
}

async function benchFirstDaysAtOnce(
  t: AccountsBenchTargets,
  db: RowDatabase,
  redis: Redis,
  opts: { companies: number; orders: number; timeoutMs: number },
): Promise<FirstDaysResult> {
  const { log } = t;
  const { schema, prefix } = rowNames(1);
  log(
    `accounts 1: seeding ${opts.companies} companies of ${opts.orders.toLocaleString("en-US")} orders (30 days, ${RESTAURANTS} restaurants)`,
  );
  const sandboxes = createSandboxCompanies(
    Array.from({ length: opts.companies }, (_, i) => ({
      seed: 4100 + i,
      restaurants: RESTAURANTS,
      history: { orders: opts.orders, days: 30 },
      delivery: { retryDelaysMs: [200, 400, 800, 1600, 3200] },
    })),
  );
  const timedServer = await listenTimed(sandboxes);
  const apiUrl = timedServer.url;
  const companies = sandboxes.companies;
  const ids = companies.map((_, i) => (i === 0 ? "default" : accountIdOf(i)));
  const expected = new Map(companies.map((s, i) => [ids[i]!, expectedOf(s)]));
  const { client, events, close: closeProbes } = await openRowProbes(db.url, redis, prefix);
  let service: ServiceChild | undefined;
  try {
    const env = serviceEnv({ redisUrl: t.redisUrl, databaseUrl: db.url, schema, prefix, apiUrl, apiKey: companies[0]!.apiKey });
    const startedAt = Date.now();
    service = await startServiceChild({ ...env, ...benchEnv() }, "accounts-1");
    const cpu = await cpuWindow(redis, service.pid, db.pid);
    const rss = rssSampler(service);
    const url = service.url;
    companies[0]!.addWebhook({ url: `${url}/webhooks`, secret: BENCH_SECRET });
    for (let i = 1; i < companies.length; i++) {
      const secret = newSecret();
      await register(url, ids[i]!, companies[i]!.apiKey, secret);
      companies[i]!.addWebhook({ url: `${url}/webhooks/${ids[i]}`, secret });
    }
    const registrationSeconds = (Date.now() - startedAt) / 1000;
    log(
      `accounts 1: ${companies.length - 1} accounts registered in ${registrationSeconds.toFixed(1)} s; waiting for every mirror (log: ${service.logPath})`,
    );
    const { whole } = await waitForMirrors(client, schema, expected, {
      timeoutMs: opts.timeoutMs,
      intervalMs: 2000,
      log,
      what: "accounts 1",
      service,
    });
    const backlogAtEnd = await changeBacklog(client, schema, events);
    const budget = await budgetByClass(url);
    const split = await cpu.end();
    const rssEnd = rss.now();
    rss.stop();
    const passes = await firstPasses(client, schema);
    // Where the wait ended: the end of an account whose mirror never became whole.
    const endedAt = Date.now();
    const spans = ids.map((account) => {
      const pass = passes.get(account);
      // Precise times from the checkpoints (its first pass's start, its last kind's completion); the poll's otherwise.
      return { begin: pass?.startedAt ?? startedAt, end: whole.has(account) ? (pass?.completedAt ?? whole.get(account)!) : endedAt };
    });
    const perCompany = companies.map((s, i): FirstDayCompany => {
      const account = ids[i]!;
      const records = recordsOf(expected.get(account)!);
      const { begin, end } = spans[i]!;
      const seconds = (end - begin) / 1000;
      const k = keyCalls(s);
      const calls = k.times.filter((at) => at <= end).length;
      return {
        account,
        records,
        seconds,
        recordsPerMinute: records / (seconds / 60),
        deviation: 0,
        callsPerMinute: calls / (seconds / 60),
        rateLimited: k.rateLimited,
        maxPerWindow: k.maxPerWindow,
        whole: whole.has(account),
      };
    });
    const average = perCompany.reduce((n, c) => n + c.recordsPerMinute, 0) / perCompany.length;
    for (const c of perCompany) c.deviation = c.recordsPerMinute / average - 1;
    const records = perCompany.reduce((n, c) => n + c.records, 0);
    const callGapMs = quantiles(companies.flatMap((s, i) => gapsOf(keyCalls(s).times, spans[i]!.begin, spans[i]!.end)));
    const profile = await stopService(service);
    // From the first import's start (the env company's, with the service) to the last mirror whole.
    const seconds = (Math.max(...spans.map((x) => x.end)) - Math.min(...spans.map((x) => x.begin))) / 1000;
    const recordsPerMinute = records / (seconds / 60);
    return {
      companies: companies.length,
      ordersEach: opts.orders,
      seconds,
      records,
      recordsPerMinute,
      ofSummedLimit: recordsPerMinute / (companies.length * PHYSICAL_RECORDS_PER_MINUTE),
      maxDeviation: Math.max(...perCompany.map((c) => Math.abs(c.deviation))),
      perCompany,
      rateLimited: perCompany.reduce((n, c) => n + c.rateLimited, 0),
      maxPerWindow: Math.max(...perCompany.map((c) => c.maxPerWindow)),
      callsByRead: callsByRead(companies),
      cpu: split,
      serviceRssPeakMiB: rss.peak(),
      serviceRssEndMiB: rssEnd,
      backlogAtEnd,
      registrationSeconds,
      callGapMs,
      answerMs: quantiles(timedServer.answerMs),
      ...(profile ? { profile } : {}),
      ...(budget ? { budget } : {}),
      allWhole: whole.size === expected.size,
      logPath: service.logPath,
    };
  } finally {
    await service?.stop();
    await closeProbes();
    await timedServer.close();
    await sandboxes.close();
    await dropPrefix(redis, prefix);
  }
}

// --- Row 2: 1,000 small accounts.

export interface ManyAccountsResult {
  accounts: number;
  ordersEach: number;
  /** The first registration → the last answered. */
  registrationSeconds: number;
  /** One `POST /accounts`'s time (ms, 8 in flight): the median of the first 100 and of the last 100. */
  registerMs: { first100: number; last100: number };
  /** The first registration → every account's orders all in its mirror (null: not within the wait). */
  importSeconds: number | null;
  /** The same for every kind (orders, bookings, menu items). */
  importAllKindsSeconds: number | null;
  importedAccounts: number;
  /** Import window: calls, 429s and the most in 60 s per key. */
  importCalls: number;
  rateLimited: number;
  maxPerWindow: number;
  importCpu: CpuSplit;
  /** The idle time asked for; `idle.seconds` runs on until the tick in flight ended. */
  idleAsked: number;
  idle: {
    seconds: number;
    calls: number;
    /** Per registered account: min, median, max. */
    perAccount: [number, number, number];
    /** Passes seen per account (its calls grouped where they lie ≥ 20 s apart): min, median, max. */
    passes: [number, number, number];
    /** Calls per pass: min, median, max. */
    callsPerPass: [number, number, number];
    predictedPasses: number;
    predictedCallsPerPass: number;
    predictedCalls: number;
    /** The active tier's ticks that fell in the window (the env company's passes), and what they predict: ticks × calls per pass × accounts. */
    ticks: number;
    /** Each tick's calls over every account: how many, and the seconds from its first to its last. */
    bursts: { calls: number; seconds: number }[];
    predictedByTicks: number;
    activeIntervalSeconds: number;
    byRead: [string, number][];
    cpu: CpuSplit;
  };
  rss: { beforeMiB: number; peakMiB: number; endMiB: number };
  /** The service's own memory report at its highest RSS and at the end (JS heap against native). */
  memory: { atPeak?: ServiceMemory; last?: ServiceMemory };
  redis: {
    beforeBytes: number;
    afterBytes: number;
    perAccountBytes: number;
    settledAfterSeconds: number;
    clientsBefore: number;
    clientsAfter: number;
  };
  /** Where the service's CPU went over the whole row (BENCH_CPU_PROF set). */
  profile?: CpuProfileSummary;
  /** Its JS heap before the registrations and after the idle time, and what grew (BENCH_HEAP_SNAPSHOT set). */
  heap?: { beforeBytes: number; afterBytes: number; growth: [string, number][] };
  logPath: string;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const spread = (xs: number[]): [number, number, number] =>
  xs.length === 0 ? [NaN, NaN, NaN] : [Math.min(...xs), median(xs), Math.max(...xs)];

/** Calls (sorted times) grouped where they lie ≥ `gapMs` apart: each group's size and span. */
function burstsOf(times: readonly number[], gapMs: number): { calls: number; seconds: number }[] {
  const out: { first: number; last: number; calls: number }[] = [];
  for (const at of times) {
    const cur = out.at(-1);
    if (!cur || at - cur.last >= gapMs) out.push({ first: at, last: at, calls: 1 });
    else [cur.last, cur.calls] = [at, cur.calls + 1];
  }
  return out.map((b) => ({ calls: b.calls, seconds: (b.last - b.first) / 1000 }));
}

/** A key's calls grouped into passes: calls ≥ `gapMs` apart start a new one. */
function passesOf(times: readonly number[], gapMs: number): number[] {
  const passes: number[] = [];
  let prev = -Infinity;
  for (const at of times) {
    if (at - prev >= gapMs) passes.push(0);
    passes[passes.length - 1]!++;
    prev = at;
  }
  return passes;
}

async function benchManyAccounts(
  t: AccountsBenchTargets,
  db: RowDatabase,
  redis: Redis,
  opts: { accounts: number; orders: number; idleSeconds: number; timeoutMs: number },
): Promise<ManyAccountsResult> {
  const { log } = t;
  const { schema, prefix } = rowNames(2);
  // Company 0 is the env company (the service needs one); 1..accounts are registered.
  const sandboxes: SandboxCompanies = createSandboxCompanies(
    Array.from({ length: opts.accounts + 1 }, (_, i) => ({
      seed: 9000 + i,
      restaurants: 2,
      history: { orders: opts.orders, days: 30, menuItems: 3 },
      delivery: { retryDelaysMs: [200, 400, 800, 1600, 3200] },
    })),
  );
  const apiUrl = await sandboxes.listen();
  const companies = sandboxes.companies;
  const registered = companies.slice(1);
  const ids = registered.map((_, i) => accountIdOf(i + 1));
  const expected = new Map(registered.map((s, i) => [ids[i]!, expectedOf(s)]));
  const { client, events, close: closeProbes } = await openRowProbes(db.url, redis, prefix);
  let service: ServiceChild | undefined;
  try {
    const env = serviceEnv({ redisUrl: t.redisUrl, databaseUrl: db.url, schema, prefix, apiUrl, apiKey: companies[0]!.apiKey });
    // The active tier's interval as configured (the default unless BENCH_ACCOUNTS_ENV says otherwise).
    const activeIntervalSeconds = loadConfig({ ...env, ...benchEnv() }).worker.reconcileActiveIntervalMs / 1000;
    // BENCH_HEAP_SNAPSHOT=<dir>: the service writes a heap snapshot there before the registrations and after the idle time.
    const heapDir = process.env.BENCH_HEAP_SNAPSHOT;
    const nodeOptions: Record<string, string> = heapDir
      ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} ${heapSnapshotOptions(heapDir)}`.trim() }
      : {};
    service = await startServiceChild({ ...env, ...benchEnv(), ...nodeOptions }, "accounts-2");
    const rss = rssSampler(service);
    const url = service.url;
    companies[0]!.addWebhook({ url: `${url}/webhooks`, secret: BENCH_SECRET });
    // The env company's own first import (20 orders) settles first: the baseline is a service with no registered account.
    await waitForMirrors(client, schema, new Map([["default", expectedOf(companies[0]!)]]), {
      timeoutMs: 120_000,
      intervalMs: 500,
      log,
      what: "accounts 2 (default)",
      service,
    });
    await waitFor(async () => (await changeBacklog(client, schema, events)).queued === 0, { timeoutMs: 60_000, intervalMs: 500 }).catch(
      () => undefined,
    );
    await sleep(3000);
    const heapBefore = heapDir ? await takeHeapSnapshot(service.child, heapDir) : undefined;
    const rssBefore = rss.now();
    const redisBefore = await usedMemory(redis);
    const clientsBefore = await connectedClients(redis);
    const cpu = await cpuWindow(redis, service.pid, db.pid);
    log(`accounts 2: registering ${opts.accounts} accounts of ${opts.orders} orders (8 at a time)`);
    const firstAt = Date.now();
    const registerMs: number[] = [];
    await inTurns(registered, 8, async (s, i) => {
      const secret = newSecret();
      const began = performance.now();
      await register(url, ids[i]!, s.apiKey, secret);
      registerMs[i] = performance.now() - began;
      s.addWebhook({ url: `${url}/webhooks/${ids[i]}`, secret });
    });
    const registrationSeconds = (Date.now() - firstAt) / 1000;
    log(`accounts 2: registered in ${registrationSeconds.toFixed(1)} s; waiting for every first import (log: ${service.logPath})`);
    const { whole, ordersWhole } = await waitForMirrors(client, schema, expected, {
      timeoutMs: opts.timeoutMs,
      intervalMs: 1000,
      log,
      what: "accounts 2",
      service,
    });
    const importCpu = await cpu.end();
    const lastOrders = ordersWhole.size === expected.size ? Math.max(...ordersWhole.values()) : null;
    const lastWhole = whole.size === expected.size ? Math.max(...whole.values()) : null;
    const importKeys = registered.map((s) => keyCalls(s));
    // Settled: the imports' change events handled (the queue empty), then Redis read again.
    const settleFrom = Date.now();
    await waitFor(
      async () => {
        const b = await changeBacklog(client, schema, events);
        return b.outbox === 0 && b.queued === 0;
      },
      { timeoutMs: 300_000, intervalMs: 1000 },
    ).catch(() => log("accounts 2: change events still waiting after 300 s; Redis read anyway"));
    await sleep(5000);
    const settledAfterSeconds = (Date.now() - settleFrom) / 1000;
    const redisAfter = await usedMemory(redis);
    const clientsAfter = await connectedClients(redis);
    // Idle: no traffic; what do the tiers' schedules cost?
    log(`accounts 2: idle for ${opts.idleSeconds} s`);
    const from = registered.map((s) => s.requestLog.length);
    const fromDefault = companies[0]!.requestLog.length;
    const idleCpu = await cpuWindow(redis, service.pid, db.pid);
    const idleStart = Date.now();
    await sleep(opts.idleSeconds * 1000);
    // The ticks that began in the window count whole: a tick's passes still running at its end finish first (quiet for 15 s).
    const toDefault = companies[0]!.requestLog.length;
    const callsNow = () => registered.reduce((n, s) => n + s.requestLog.length, 0);
    for (
      let seen = callsNow(), quietSince = Date.now();
      Date.now() - quietSince < 15_000 && Date.now() - idleStart < (opts.idleSeconds + 120) * 1000;
    ) {
      await sleep(1000);
      if (callsNow() !== seen) [seen, quietSince] = [callsNow(), Date.now()];
    }
    const idleSeconds = (Date.now() - idleStart) / 1000;
    const idleSplit = await idleCpu.end();
    const to = registered.map((s) => s.requestLog.length);
    const idleKeys = registered.map((s, i) => keyCalls(s, from[i], to[i]));
    // The scheduler's active ticks in the window: the env company's passes (each tick runs its pass and queues every account's).
    const ticks = passesOf(keyCalls(companies[0]!, fromDefault, toDefault).times, 20_000).length;
    // How long one tick's passes of every account take: the bursts of all their calls.
    const bursts = burstsOf(
      idleKeys.flatMap((k) => k.times).sort((a, b) => a - b),
      20_000,
    );
    const passes = idleKeys.map((k) => passesOf(k.times, 20_000));
    const today = new Date().toISOString().slice(0, 10);
    // One page per list at this size: a pass reads each kind's active lists once.
    const predictedCallsPerPass = SYNCED_KINDS.reduce((n, kind) => n + RESOURCES[kind].activeReads(today).length, 0);
    const predictedPasses = idleSeconds / activeIntervalSeconds;
    const rssEnd = rss.now();
    rss.stop();
    const memory = service.memory();
    const heapAfter = heapDir ? await takeHeapSnapshot(service.child, heapDir) : undefined;
    const profile = await stopService(service);
    const heap = heapBefore && heapAfter ? heapOf(heapBefore, heapAfter) : undefined;
    return {
      accounts: opts.accounts,
      ordersEach: opts.orders,
      registrationSeconds,
      registerMs: { first100: median(registerMs.slice(0, 100)), last100: median(registerMs.slice(-100)) },
      importSeconds: lastOrders === null ? null : (lastOrders - firstAt) / 1000,
      importAllKindsSeconds: lastWhole === null ? null : (lastWhole - firstAt) / 1000,
      importedAccounts: ordersWhole.size,
      importCalls: importKeys.reduce((n, k) => n + k.calls, 0),
      rateLimited: importKeys.reduce((n, k) => n + k.rateLimited, 0) + idleKeys.reduce((n, k) => n + k.rateLimited, 0),
      maxPerWindow: Math.max(...registered.map((s) => keyCalls(s).maxPerWindow)),
      importCpu,
      idleAsked: opts.idleSeconds,
      idle: {
        seconds: idleSeconds,
        calls: idleKeys.reduce((n, k) => n + k.calls, 0),
        perAccount: spread(idleKeys.map((k) => k.calls)),
        passes: spread(passes.map((p) => p.length)),
        callsPerPass: spread(passes.flat()),
        predictedPasses,
        predictedCallsPerPass,
        predictedCalls: predictedPasses * predictedCallsPerPass * opts.accounts,
        ticks,
        bursts,
        predictedByTicks: ticks * predictedCallsPerPass * opts.accounts,
        activeIntervalSeconds,
        byRead: callsByRead(registered, from, to),
        cpu: idleSplit,
      },
      rss: { beforeMiB: rssBefore, peakMiB: rss.peak(), endMiB: rssEnd },
      memory,
      redis: {
        beforeBytes: redisBefore,
        afterBytes: redisAfter,
        perAccountBytes: (redisAfter - redisBefore) / opts.accounts,
        settledAfterSeconds,
        clientsBefore,
        clientsAfter,
      },
      ...(profile ? { profile } : {}),
      ...(heap ? { heap } : {}),
      logPath: service.logPath,
    };
  } finally {
    await service?.stop();
    await closeProbes();
    await sandboxes.close();
    await dropPrefix(redis, prefix);
  }
}

/** Two heap snapshots summarized: the heap's size at each, and what grew between them. */
function heapOf(beforeFile: string, afterFile: string) {
  const before = summarizeHeapSnapshot(beforeFile);
  const after = summarizeHeapSnapshot(afterFile);
  return { beforeBytes: before.totalBytes, afterBytes: after.totalBytes, growth: heapGrowth(before, after).slice(0, 15) };
}

/** BENCH_ACCOUNTS_ENV='{"WORKER_CONCURRENCY":"20"}': service settings to try, over the defaults. */
const benchEnv = () => JSON.parse(process.env.BENCH_ACCOUNTS_ENV ?? "{}") as Record<string, string>;

// --- Row 3: a flood beside a quiet company.

export interface KeyFigures {
  account: string;
  calls: number;
  callsPerMinute: number;
  rateLimited: number;
  maxPerWindow: number;
}

export interface FloodResult {
  historyOrders: number;
  /** The flood: order events sent at once to the env company (A). */
  flood: {
    events: number;
    madeInMs: number;
    reachedSeconds: number | null;
    p50: number;
    p99: number;
    lost: number;
    /** Change → its webhook event handled by the worker (delivery, the edge, the ingest stream, the handlers): p50, p99 (s). */
    handledP50: number;
    handledP99: number;
    /** A's calls from the flood on: seconds after it began, and what each read. */
    calls: { afterSeconds: number; read: string }[];
  };
  /** The quiet company (B), a registered account: its live traffic meanwhile. */
  quiet: {
    account: string;
    eventsPerSecond: number;
    changes: number;
    p50: number;
    p90: number;
    p99: number;
    max: number;
    lost: number;
    handledP50: number;
    handledP99: number;
  };
  /** B's first import at its key's 120/min, before the window (seconds). */
  quietImportSeconds: number | null;
  /** Change events of B's import still unhandled when the traffic began (the wait for them is capped). */
  backlogAtStart: { outbox: number; queued: number };
  windowSeconds: number;
  keys: KeyFigures[];
  callsByRead: [string, number][];
}

/** A change event as row 3's handler saw it, with its account. */
interface SeenAccountChange extends SeenChange {
  account: string;
}

async function benchFlood(
  t: AccountsBenchTargets,
  db: RowDatabase,
  redis: Redis,
  opts: { orders: number; floodEvents: number; quietEventsPerSecond: number; windowSeconds: number; floodAfterSeconds: number },
): Promise<FloodResult> {
  const { log } = t;
  const { schema, prefix } = rowNames(3);
  const importKey = newKey();
  const quietId = "quiet";
  log(`accounts 3: seeding two companies of ${opts.orders.toLocaleString("en-US")} orders (30 days)`);
  const sandboxes = createSandboxCompanies([
    {
      seed: 7301,
      restaurants: RESTAURANTS,
      history: { orders: opts.orders, days: 30 },
      unmeteredKeys: [importKey],
      delivery: { retryDelaysMs: [200, 400, 800, 1600, 3200] },
    },
    {
      seed: 7302,
      restaurants: RESTAURANTS,
      history: { orders: opts.orders, days: 30 },
      delivery: { retryDelaysMs: [200, 400, 800, 1600, 3200] },
    },
  ]);
  const apiUrl = await sandboxes.listen();
  const [a, b] = sandboxes.companies as [Sandbox, Sandbox];
  const { client, events, close: closeProbes } = await openRowProbes(db.url, redis, prefix);
  const env = serviceEnv({ redisUrl: t.redisUrl, databaseUrl: db.url, schema, prefix, apiUrl, apiKey: a.apiKey });
  let web: ServiceChild | undefined;
  let service: Awaited<ReturnType<typeof createService>> | undefined;
  try {
    // A (the env company) imported fast, as the sync benches import: the unmetered key, no change events.
    log("accounts 3: importing A's history (unmetered key, backfill --no-changes)");
    await backfill({ ...env, API_KEY: importKey, API_RATE: "1000000" }, ["--no-changes"]);
    // The worker in this process, whose change handlers record what each account's mirror shows;
    // the edge (with the operator API) its own process, as deployed.
    const seen = new Map<string, SeenAccountChange[]>();
    const record = (event: { createdAt: string; data: { id: string; source: string; after: unknown } }, ctx: { account: string }) => {
      if (event.data.source === "backfill") return Promise.resolve(); // the first import's writes
      const after = event.data.after as { status?: string } | null;
      const change: SeenAccountChange = {
        account: ctx.account,
        id: event.data.id,
        status: after?.status,
        source: event.data.source,
        at: Date.parse(event.createdAt) || Date.now(),
      };
      seen.set(ctx.account, [...(seen.get(ctx.account) ?? []), change]);
      return Promise.resolve();
    };
    // Each webhook event's handling too (its first attempt's handlers ran), to split a change's way into delivery and handling, then the refresh.
    const handled = new Map<string, { type: string; id: string; status: string | undefined; at: number }[]>();
    const onEvent = (event: { type: string; data?: { id?: string; status?: string } }, ctx: { account: string }) => {
      if (event.type.startsWith("change.") || event.data?.id === undefined) return Promise.resolve();
      const list = handled.get(ctx.account) ?? [];
      list.push({ type: event.type, id: event.data.id, status: event.data.status, at: Date.now() });
      handled.set(ctx.account, list);
      return Promise.resolve();
    };
    const handlers = {
      "change.order": record,
      "change.booking": record,
      "change.menu_item": record,
      "*": onEvent,
    } as unknown as EventHandlers;
    const config = loadConfig({ ...env, ...benchEnv(), ROLE: "worker", HOST: "127.0.0.1", PORT: "0" });
    // The worker runs here (its handlers record what the row measures); its log goes to a file of its own at the level configured.
    const workerLog = join(tmpdir(), `svc-bench-accounts-3-worker-${process.pid}.log`);
    const logger = createLogger({
      level: config.logLevel,
      secrets: secretsOf(config),
      destination: pino.destination({ dest: workerLog, sync: false }),
    });
    service = await createService({ config, logger, handlers });
    await service.start();
    web = await startServiceChild({ ...env, ...benchEnv() }, "accounts-3-web", "web");
    a.addWebhook({ url: `${web.url}/webhooks`, secret: BENCH_SECRET });
    const secret = newSecret();
    const registeredAt = Date.now();
    await register(web.url, quietId, b.apiKey, secret);
    b.addWebhook({ url: `${web.url}/webhooks/${quietId}`, secret });
    log(`accounts 3: B registered; its first import at 120 calls/min (logs: the edge ${web.logPath}, the worker ${workerLog})`);
    const imported = await waitForMirrors(client, schema, new Map([[quietId, expectedOf(b)]]), {
      timeoutMs: 600_000,
      intervalMs: 1000,
      log,
      what: "accounts 3 (B's import)",
      service: web,
    });
    const importedAt = imported.whole.get(quietId);
    // Its import's change events are handled first (at most 3 min): the window measures the flood, not them.
    await waitFor(async () => (await changeBacklog(client, schema, events)).queued === 0, { timeoutMs: 180_000, intervalMs: 1000 }).catch(
      () => undefined,
    );
    const backlogAtStart = await changeBacklog(client, schema, events);
    const from = [a.requestLog.length, b.requestLog.length];
    const began = Date.now();
    log(
      `accounts 3: B's live traffic at ${opts.quietEventsPerSecond} event/s for ${opts.windowSeconds} s; ${opts.floodEvents} events to A after ${opts.floodAfterSeconds} s`,
    );
    const traffic = b.startTraffic({ eventsPerSecond: opts.quietEventsPerSecond });
    await sleep(opts.floodAfterSeconds * 1000);
    // The flood: new orders, then each moved on, made as fast as the sandbox makes them (each sends its webhook).
    const flood: TrafficChange[] = [];
    const floodStart = Date.now();
    const created = Array.from({ length: Math.ceil(opts.floodEvents / 2) }, () => {
      const o = a.actions.createOrder({ paid: true });
      flood.push({ at: Date.now(), type: "order.created", id: o.id, restaurantId: o.restaurantId, status: o.status, missed: false });
      return o;
    });
    for (const o of created.slice(0, opts.floodEvents - created.length)) {
      const moved = a.actions.updateOrderStatus(o.id, "CONFIRMED");
      flood.push({
        at: Date.now(),
        type: "order.status_changed",
        id: o.id,
        restaurantId: o.restaurantId,
        status: moved.status,
        missed: false,
      });
    }
    const madeInMs = Date.now() - floodStart;
    await sleep(Math.max(0, began + opts.windowSeconds * 1000 - Date.now()));
    traffic.stop();
    const windowSeconds = (Date.now() - began) / 1000;
    const to = [a.requestLog.length, b.requestLog.length];
    const quietChanges = traffic.changes.filter((ch) => !ch.missed);
    const seenOf = (account: string) => seen.get(account) ?? [];
    // Drain: every change should reach its mirror; give up on the rest after 90 s.
    await waitFor(
      () =>
        quietChanges.every((ch) => reachedAt(ch, seenOf(quietId)) !== undefined) &&
        flood.every((ch) => reachedAt(ch, seenOf("default")) !== undefined),
      { timeoutMs: 90_000, intervalMs: 500 },
    ).catch(() => undefined);
    const delays = (changes: TrafficChange[], account: string) =>
      changes
        .map((ch) => {
          const at = reachedAt(ch, seenOf(account));
          return at === undefined ? undefined : Math.max(0, at - ch.at) / 1000;
        })
        .filter((d): d is number => d !== undefined)
        .sort((x, y) => x - y);
    /** Change → its webhook event handled (s), for the changes whose event was seen. */
    const handledDelays = (changes: TrafficChange[], account: string) => {
      const byId = new Map<string, { type: string; status: string | undefined; at: number }[]>();
      for (const h of handled.get(account) ?? []) byId.set(h.id, [...(byId.get(h.id) ?? []), h]);
      return changes
        .map((ch) =>
          byId.get(ch.id)?.find((h) => h.type === ch.type && (ch.status === undefined || h.status === ch.status) && h.at >= ch.at - 1000),
        )
        .map((h, i) => (h ? Math.max(0, h.at - changes[i]!.at) / 1000 : undefined))
        .filter((d): d is number => d !== undefined)
        .sort((x, y) => x - y);
    };
    const quietHandled = handledDelays(quietChanges, quietId);
    const floodHandled = handledDelays(flood, "default");
    const quietDelays = delays(quietChanges, quietId);
    const floodDelays = delays(flood, "default");
    const floodReached = flood.map((ch) => reachedAt(ch, seenOf("default")));
    // A's calls after the flood began, in order: when its refresh read what.
    const aKey = keyHash(a.apiKey);
    const floodCalls = a.requestLog
      .slice(from[0], to[0])
      .filter((r) => r.keyHash === aKey && r.at >= floodStart)
      .map((r) => ({ afterSeconds: (r.at - floodStart) / 1000, read: describeRead(r.path, r.query) }));
    const keys = [a, b].map((s, i): KeyFigures => {
      const k = keyCalls(s, from[i], to[i]);
      return {
        account: i === 0 ? "default (A, flooded)" : `${quietId} (B)`,
        calls: k.calls,
        callsPerMinute: k.calls / (windowSeconds / 60),
        rateLimited: k.rateLimited,
        maxPerWindow: k.maxPerWindow,
      };
    });
    return {
      historyOrders: opts.orders,
      flood: {
        events: flood.length,
        madeInMs,
        reachedSeconds: floodReached.every((x) => x !== undefined) ? (Math.max(...floodReached) - floodStart) / 1000 : null,
        p50: percentile(floodDelays, 50),
        p99: percentile(floodDelays, 99),
        lost: flood.length - floodDelays.length,
        handledP50: percentile(floodHandled, 50),
        handledP99: percentile(floodHandled, 99),
        calls: floodCalls,
      },
      quiet: {
        account: quietId,
        eventsPerSecond: quietChanges.length / windowSeconds,
        changes: quietChanges.length,
        p50: percentile(quietDelays, 50),
        p90: percentile(quietDelays, 90),
        p99: percentile(quietDelays, 99),
        max: quietDelays.at(-1) ?? NaN,
        lost: quietChanges.length - quietDelays.length,
        handledP50: percentile(quietHandled, 50),
        handledP99: percentile(quietHandled, 99),
      },
      quietImportSeconds: importedAt === undefined ? null : (importedAt - registeredAt) / 1000,
      backlogAtStart,
      windowSeconds,
      keys,
      callsByRead: callsByRead([a, b], from, to),
    };
  } finally {
    await web?.stop();
    await service?.stop();
    await closeProbes();
    await sandboxes.close();
    await dropPrefix(redis, prefix);
  }
}

// --- The part: the rows asked for, each over a fresh PostgreSQL server.

export interface AccountsBenchResult {
  rows: AccountsRow[];
  firstDays?: FirstDaysResult;
  many?: ManyAccountsResult;
  flood?: FloodResult;
  seconds: number;
}

/** BENCH_ACCOUNTS_ROWS=1,3: some rows only (all by default); throws on anything else. */
export function accountsRows(spec: string | undefined): AccountsRow[] {
  if (spec === undefined || spec.trim() === "") return [...ACCOUNTS_ROWS];
  const rows = spec.split(",").map((s) => Number(s.trim()));
  const bad = rows.find((r) => !ACCOUNTS_ROWS.includes(r as AccountsRow));
  if (bad !== undefined) throw new Error(`BENCH_ACCOUNTS_ROWS takes rows ${ACCOUNTS_ROWS.join(",")}, got "${spec}"`);
  return [...new Set(rows as AccountsRow[])].sort();
}

/** `npm run bench -- --only accounts`: the rows asked for, one at a time (each binds the machine's CPU its own way). */
export async function benchAccounts(t: AccountsBenchTargets & { rows: readonly AccountsRow[] }): Promise<AccountsBenchResult> {
  const started = performance.now();
  const redis = new Redis(t.redisUrl, { maxRetriesPerRequest: null });
  const result: AccountsBenchResult = { rows: [...t.rows], seconds: 0 };
  const withDatabase = async <T>(work: (db: RowDatabase) => Promise<T>): Promise<T> => {
    const db = await t.database();
    try {
      return await work(db);
    } finally {
      await db.destroy();
    }
  };
  // BENCH_ACCOUNTS_SMALL=1: every row at a toy size, to check the bench itself in a minute or two (its figures mean nothing).
  const small = process.env.BENCH_ACCOUNTS_SMALL === "1";
  try {
    if (t.rows.includes(1))
      result.firstDays = await withDatabase((db) =>
        benchFirstDaysAtOnce(t, db, redis, { companies: small ? 3 : 20, orders: small ? 1000 : 20_000, timeoutMs: 15 * 60_000 }),
      );
    if (t.rows.includes(2))
      result.many = await withDatabase((db) =>
        benchManyAccounts(t, db, redis, { accounts: small ? 30 : 1000, orders: 20, idleSeconds: small ? 30 : 180, timeoutMs: 10 * 60_000 }),
      );
    if (t.rows.includes(3))
      result.flood = await withDatabase((db) =>
        benchFlood(t, db, redis, {
          orders: small ? 2000 : 20_000,
          floodEvents: small ? 100 : 500,
          quietEventsPerSecond: 1,
          windowSeconds: small ? 40 : 150,
          floodAfterSeconds: small ? 10 : 20,
        }),
      );
  } finally {
    redis.disconnect();
  }
  result.seconds = (performance.now() - started) / 1000;
  return result;
}

// --- The report.

const fmt = (n: number | null | undefined, digits = 0) =>
  n !== null && n !== undefined && Number.isFinite(n)
    ? n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits })
    : "—";
const pct = (share: number, digits = 0) => `${fmt(share * 100, digits)} %`;
const met = (ok: boolean) => (ok ? "met" : "**missed**");

function cpuLine(c: CpuSplit): string {
  const used = c.service + (c.postgres ?? 0) + c.redis + c.bench;
  return `over ${fmt(c.seconds)} s: the service ${fmt(c.service, 1)} CPU s (${pct(c.service / c.seconds)} of one core), PostgreSQL ${c.postgres === null ? "not measured" : `${fmt(c.postgres, 1)} s`}, Redis ${fmt(c.redis, 1)} s, the bench (sandboxes) ${fmt(c.bench, 1)} s: ${fmt(used, 1)} of ${fmt(c.seconds * cpus().length)} core-seconds (${cpus().length} cores); the machine was ${pct(c.machineBusy)} busy`;
}

/** The budget's pace at 120 calls/min: one slot per (60 s + 1 s safety) ÷ 120 (upstream/rate-limiter.ts). */
const PACE_MS = Math.ceil(61_000 / 120);

function profileLine(p: CpuProfileSummary): string {
  const top = (rows: [string, number][]) =>
    rows
      .slice(0, 6)
      .map(([name, ms]) => `${name} ${pct(ms / p.busyMs)}`)
      .join(", ");
  return `The service's CPU profile (BENCH_CPU_PROF; ${fmt(p.busyMs / 1000, 1)} s sampled busy, self time): by area ${top(p.byArea)}; by function ${top(p.byFunction)}; by the nearest function of src/ on the stack (synchronous stacks only) ${top(p.byOwnCode)}.`;
}

export function firstDaysReport(r: FirstDaysResult): string[] {
  const worst = [...r.perCompany].sort((x, y) => Math.abs(y.deviation) - Math.abs(x.deviation));
  const slowest = [...r.perCompany].sort((x, y) => x.recordsPerMinute - y.recordsPerMinute)[0];
  return [
    `**1. ${r.companies} companies' first days at once** (${fmt(r.ordersEach)} orders each, 30 days, ${RESTAURANTS} restaurants; company 0 is \`default\`, the others registered with \`POST /accounts\` right after the start; each key at 120 calls/min; reconciliation at its defaults; the service one process, ROLE=all, over PostgreSQL): ${r.allWhole ? "every mirror whole" : "**not every mirror whole within the wait**"} ${fmt(r.seconds, 1)} s after the start; ${fmt(r.records)} records: **${fmt(r.recordsPerMinute)} records/min, ${fmt(r.ofSummedLimit, 2)} of the summed limit** (${r.companies} × ${fmt(PHYSICAL_RECORDS_PER_MINUTE)}/min; target ≥ 0.8: ${met(r.ofSummedLimit >= 0.8)}).`,
    "",
    `Per company (its first pass's start → its mirror whole): ${fmt(Math.min(...r.perCompany.map((c) => c.recordsPerMinute)))}–${fmt(Math.max(...r.perCompany.map((c) => c.recordsPerMinute)))} records/min, ${fmt(Math.min(...r.perCompany.map((c) => c.callsPerMinute)))}–${fmt(Math.max(...r.perCompany.map((c) => c.callsPerMinute)))} calls/min; **largest deviation from the average ${pct(r.maxDeviation, 1)}** (${worst[0]?.account ?? "—"}; target all within 20 %: ${met(r.maxDeviation <= 0.2)}); slowest ${slowest?.account ?? "—"} ${fmt(slowest?.seconds, 1)} s. **429s: ${r.rateLimited}** (target 0: ${met(r.rateLimited === 0)}); **most calls by one key in any 60 s: ${r.maxPerWindow}** (≤ 120: ${met(r.maxPerWindow <= 120)}).`,
    "",
    `The service process: CPU ${cpuLine(r.cpu)}; RSS peak ${fmt(r.serviceRssPeakMiB, 1)} MiB (${fmt(r.serviceRssEndMiB, 1)} MiB at the end). Change events of the imports still unhandled when the last mirror was whole: ${fmt(r.backlogAtEnd.outbox)} in the outbox, ${fmt(r.backlogAtEnd.queued)} in the events queue. Registering the ${r.companies - 1} accounts took ${fmt(r.registrationSeconds, 1)} s from the start.`,
    "",
    `A key's calls during its import came **${fmt(r.callGapMs[0])} ms apart at the median** (p90 ${fmt(r.callGapMs[1])}, p99 ${fmt(r.callGapMs[2])} ms; the budget's pace is ${fmt(PACE_MS)} ms), of which the sandbox's answer took ${fmt(r.answerMs[0], 1)} ms (p90 ${fmt(r.answerMs[1], 1)}, p99 ${fmt(r.answerMs[2], 1)} ms): the rest of a page's round is the service's (write the page and its change events, save the checkpoint, take the next slot).${
      r.budget
        ? ` Slots by budget class (every key): ${Object.entries(r.budget.slots)
            .map(([c, n]) => `${c} ${fmt(n)} (mean wait for one ${fmt(r.budget?.meanWaitMs[c], 0)} ms)`)
            .join(", ")}.`
        : ""
    }`,
    ...(r.profile ? ["", profileLine(r.profile)] : []),
    "",
    `Calls by read (all keys): ${r.callsByRead
      .slice(0, 8)
      .map(([read, n]) => `${read} ${fmt(n)}`)
      .join("; ")}.`,
    "",
    "| account | records | seconds | records/min | vs average | calls/min | 429 | most in 60 s |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
    ...r.perCompany.map(
      (c) =>
        `| ${c.account}${c.whole ? "" : " (not whole)"} | ${fmt(c.records)} | ${fmt(c.seconds, 1)} | ${fmt(c.recordsPerMinute)} | ${c.deviation >= 0 ? "+" : ""}${pct(c.deviation, 1)} | ${fmt(c.callsPerMinute)} | ${c.rateLimited} | ${c.maxPerWindow} |`,
    ),
  ];
}

export function manyAccountsReport(r: ManyAccountsResult): string[] {
  const i = r.idle;
  const MiB = 1024 * 1024;
  return [
    `**2. ${fmt(r.accounts)} accounts** (${r.ordersEach} orders each, 2 restaurants, 3 menu items each; registered with \`POST /accounts\`, 8 at a time, in ${fmt(r.registrationSeconds, 1)} s, one taking ${fmt(r.registerMs.first100)} ms at the median of the first 100 and ${fmt(r.registerMs.last100)} ms of the last 100; the service one process, ROLE=all): first registration → every account's orders in its mirror **${r.importSeconds === null ? `not within the wait (${fmt(r.importedAccounts)} of ${fmt(r.accounts)})` : `${fmt(r.importSeconds, 1)} s`}** (every kind: ${r.importSeconds === null ? "—" : `${fmt(r.importAllKindsSeconds, 1)} s`}; target ≤ 5 min: ${met(r.importSeconds !== null && r.importSeconds <= 300)}); ${fmt(r.importCalls)} calls, ${r.rateLimited} 429s, most by one key in 60 s ${r.maxPerWindow}. CPU meanwhile ${cpuLine(r.importCpu)}.`,
    "",
    `Idle for ${fmt(i.seconds)} s (no traffic; ${fmt(r.idleAsked)} s, then until the tick in flight ended): **${fmt(i.calls)} calls** (${fmt(i.calls / (i.seconds / 60))}/min in all); per account ${i.perAccount.map((n) => fmt(n)).join(" / ")} (min / median / max) in ${i.passes.map((n) => fmt(n)).join(" / ")} passes of ${i.callsPerPass.map((n) => fmt(n)).join(" / ")} calls. The schedules predict ${fmt(i.predictedPasses, 2)} active passes on average in such a window (every ${fmt(i.activeIntervalSeconds)} s) × ${i.predictedCallsPerPass} calls (one page per active list) × ${fmt(r.accounts)} = ${fmt(i.predictedCalls)} calls; ${i.ticks} ticks fell in this one (the env company's passes), which predict **${fmt(i.predictedByTicks)} calls** (measured ${fmt(i.calls / i.predictedByTicks, 2)}× that; each tick's calls of every account: ${i.bursts.map((b) => `${fmt(b.calls)} over ${fmt(b.seconds, 1)} s`).join(", ")}); the full tier's next pass is an hour away. By read: ${i.byRead
      .slice(0, 6)
      .map(([read, n]) => `${read} ${fmt(n)}`)
      .join("; ")}. CPU ${cpuLine(i.cpu)}.`,
    "",
    `The service's RSS: ${fmt(r.rss.beforeMiB, 1)} MiB before registering, **peak ${fmt(r.rss.peakMiB, 1)} MiB**, ${fmt(r.rss.endMiB, 1)} MiB after the idle time (target < 400 MB = 381 MiB: ${met(r.rss.peakMiB < 381)}); by its own report ${memoryLine(r.memory.atPeak)} at its highest and ${memoryLine(r.memory.last)} at the end. Redis \`used_memory\`: ${fmt(r.redis.beforeBytes / MiB, 1)} MiB before registering, ${fmt(r.redis.afterBytes / MiB, 1)} MiB once the imports settled (their change events handled, ${fmt(r.redis.settledAfterSeconds)} s after the last mirror was whole; Redis clients ${r.redis.clientsBefore} → ${r.redis.clientsAfter}): **${fmt(r.redis.perAccountBytes / 1024, 1)} KiB per account**, which includes the finished jobs BullMQ keeps (KEEP_COMPLETED_JOBS, 1,000 by default).`,
    ...(r.profile ? ["", profileLine(r.profile)] : []),
    ...(r.heap
      ? [
          "",
          `The service's JS heap (BENCH_HEAP_SNAPSHOT): ${fmt(r.heap.beforeBytes / MiB, 1)} MiB before registering, ${fmt(r.heap.afterBytes / MiB, 1)} MiB after the idle time (${fmt((r.heap.afterBytes - r.heap.beforeBytes) / 1024 / r.accounts, 1)} KiB per account); what grew most (self size): ${r.heap.growth
            .slice(0, 10)
            .map(([name, bytes]) => `${name} ${fmt(bytes / MiB, 1)} MiB`)
            .join(", ")}.`,
        ]
      : []),
  ];
}

const memoryLine = (m: ServiceMemory | undefined) =>
  m
    ? `RSS ${fmt(m.rss, 1)} MiB = JS heap ${fmt(m.heapTotal, 1)} MiB reserved (${fmt(m.heapUsed, 1)} used) + external ${fmt(m.external, 1)} MiB (array buffers ${fmt(m.arrayBuffers, 1)}) + ${fmt(m.rss - m.heapTotal - m.external, 1)} MiB else (code, stacks, the allocator's)`
    : "—";

export function floodReport(r: FloodResult): string[] {
  const q = r.quiet;
  const f = r.flood;
  const limited = r.keys.reduce((n, k) => n + k.rateLimited, 0);
  const most = Math.max(...r.keys.map((k) => k.maxPerWindow));
  return [
    `**3. A flood beside a quiet company** (two companies of ${fmt(r.historyOrders)} orders, 30 days; A is \`default\`, imported first through an unmetered key; B a registered account, its first import at 120 calls/min took ${fmt(r.quietImportSeconds, 1)} s; ${fmt(r.windowSeconds)} s window): B's live traffic at ${fmt(q.eventsPerSecond, 2)} event/s, change → B's change event **p50 ${fmt(q.p50, 1)} s, p90 ${fmt(q.p90, 1)} s, p99 ${fmt(q.p99, 1)} s** (max ${fmt(q.max, 1)} s), ${q.changes} changes, **${q.lost} lost** (target p99 ≤ 10 s: ${met(q.p99 <= 10)}); its webhook events handled p50 ${fmt(q.handledP50, 1)} s, p99 ${fmt(q.handledP99, 1)} s after the change. The flood: ${f.events} order events to A made in ${fmt(f.madeInMs)} ms; all in A's mirror ${f.reachedSeconds === null ? `**not** (${f.lost} never seen)` : `after ${fmt(f.reachedSeconds, 1)} s`} (p50 ${fmt(f.p50, 1)} s, p99 ${fmt(f.p99, 1)} s; their webhook events handled p50 ${fmt(f.handledP50, 1)} s, p99 ${fmt(f.handledP99, 1)} s after the change, the rest is the refresh's). **429s: ${limited}** (target 0: ${met(limited === 0)}); **most calls by one key in any 60 s: ${most}** (≤ 120: ${met(most <= 120)}). Change events of B's import still unhandled when the window began: ${fmt(r.backlogAtStart.queued)}.`,
    "",
    `A's calls from the flood on (seconds after it began: what they read): ${f.calls
      .slice(0, 12)
      .map((c) => `+${fmt(c.afterSeconds, 1)} ${c.read}`)
      .join("; ")}${f.calls.length > 12 ? `; … ${f.calls.length} in all` : ""}.`,
    "",
    `Per key in the window: ${r.keys.map((k) => `${k.account} ${fmt(k.calls)} calls (${fmt(k.callsPerMinute)}/min), ${k.rateLimited} 429s, most in 60 s ${k.maxPerWindow}`).join("; ")}. By read: ${r.callsByRead
      .slice(0, 6)
      .map(([read, n]) => `${read} ${fmt(n)}`)
      .join("; ")}.`,
  ];
}

/** The part's sections in Markdown, one per row run. */
export function accountsSections(r: AccountsBenchResult): Partial<Record<AccountsRow, string[]>> {
  return {
    ...(r.firstDays ? { 1: firstDaysReport(r.firstDays) } : {}),
    ...(r.many ? { 2: manyAccountsReport(r.many) } : {}),
    ...(r.flood ? { 3: floodReport(r.flood) } : {}),
  };
}

export const ACCOUNTS_RUNS_HEADER = [
  "# Accounts runs",
  "",
  "Every `npm run bench -- --only accounts` appends its headline figures here (bench/accounts.ts); a row not run is —. Targets (issue 41): 20 first days at once ≥ 0.8 of the summed limit, each company within 20 % of the average, no 429, ≤ 120 calls per key in any 60 s; 1,000 accounts imported within 5 min, the service under 400 MB; a flood beside a quiet company: its p99 ≤ 10 s, no 429.",
  "",
  "| run (UTC) | commit | 20 first days: records/min (of summed limit), largest deviation, 429, most/60 s | service CPU s over s | 1,000 accounts: import s, RSS peak MiB | idle calls (predicted) | Redis KiB/account | flood: B p99 (max), lost, 429, most/60 s |",
  "|---|---|---|---|---|---|---|---|",
];

/** One line of bench/results/accounts-runs.md. */
export function accountsRunLine(r: AccountsBenchResult, at: string, commit: string): string {
  const d = r.firstDays;
  const m = r.many;
  const f = r.flood;
  const cells = [
    at.slice(0, 16).replace("T", " "),
    commit,
    d ? `${fmt(d.recordsPerMinute)} (${fmt(d.ofSummedLimit, 2)}), ${pct(d.maxDeviation, 1)}, ${d.rateLimited}, ${d.maxPerWindow}` : "—",
    d ? `${fmt(d.cpu.service)} over ${fmt(d.cpu.seconds)}` : "—",
    m ? `${m.importSeconds === null ? "not all" : fmt(m.importSeconds, 1)}, ${fmt(m.rss.peakMiB)}` : "—",
    m ? `${fmt(m.idle.calls)} (${fmt(m.idle.predictedCalls)}) in ${fmt(m.idle.seconds)} s` : "—",
    m ? fmt(m.redis.perAccountBytes / 1024, 1) : "—",
    f
      ? `${fmt(f.quiet.p99, 1)} s (${fmt(f.quiet.max, 1)}), ${f.quiet.lost}, ${f.keys.reduce((n, k) => n + k.rateLimited, 0)}, ${Math.max(...f.keys.map((k) => k.maxPerWindow))}`
      : "—",
  ];
  return `| ${cells.join(" | ")} |`;
}
