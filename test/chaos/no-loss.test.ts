import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { Redis } from "ioredis";
import { afterAll, describe, expect, inject, it } from "vitest";
import { createPostgresMirror } from "../../src/mirror/mirror-store.js";
import { createDatabase } from "../../src/mirror/database.js";
import { redisKeys } from "../../src/redis/redis.js";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { runCli, type CliProcess } from "../helpers/cli-process.js";
import { randomSchema } from "../helpers/postgres.js";
import { startRedisServer, type RedisServer } from "../helpers/redis-server.js";
import { sandboxAsSql, sqlMirror } from "../helpers/sql-mirror.js";
import { waitFor } from "../helpers/wait-for.js";
import { sendAll } from "./retrying-sender.js";

const SECRET = "whsec_chaos_no_loss_3c1d9e";
const ADMIN = "chaos-admin-token-7f2e0b9a11";
const EVENTS = 10_000;

let redis: RedisServer | undefined;
let sandbox: Sandbox | undefined;
let dir: string | undefined;
const procs: CliProcess[] = [];
afterAll(async () => {
  for (const p of procs) if (p.child.exitCode === null) p.child.kill("SIGKILL");
  await sandbox?.close();
  await redis?.destroy();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("no loss through faults", () => {
  it(`handles every one of ${EVENTS} accepted events at least once through a Redis restart and two worker SIGKILLs (mid-batch on the ingest stream)`, async () => {
    // Separate web and worker processes share one PostgreSQL server (the embedded store is one process's).
    const databaseUrl = inject("databaseUrl");
    const schema = randomSchema();
    redis = await startRedisServer({ appendOnly: true });
    sandbox = createSandbox({ restaurants: 3 });
    const apiUrl = await sandbox.listen();
    dir = mkdtempSync(join(tmpdir(), "svc-chaos-"));
    const record = join(dir, "handled.txt");
    const handlers = join(dir, "handlers.mjs");
    writeFileSync(
      handlers,
      `import { appendFileSync } from "node:fs";
export default { "*": async (event) => { appendFileSync(process.env.CHAOS_RECORD_FILE, event.id + "\\n"); } };\n`,
    );
    const prefix = `chaos-${randomUUID().slice(0, 6)}`;
    const env = {
      REDIS_URL: redis.url,
      QUEUE_PREFIX: prefix,
      SIGNING_SECRET: SECRET,
      ADMIN_TOKEN: ADMIN,
      PORT: "0",
      API_BASE_URL: apiUrl,
      API_KEY: sandbox.apiKey,
      HANDLERS_MODULE: handlers,
      CHAOS_RECORD_FILE: record,
      DATABASE_URL: databaseUrl,
      DATABASE_SCHEMA: schema,
      JOB_LOCK_MS: "3000",
      INGEST_CLAIM_IDLE_MS: "2000",
      INGEST_BATCH_SIZE: "100",
      ENQUEUE_TIMEOUT_MS: "1000",
      WORKER_CONCURRENCY: "50",
      SYNC_DEBOUNCE_MS: "300",
      RECONCILE_INTERVAL_SECONDS: "0",
      JOB_BACKOFF_MS: "200",
    };
    const start = async (role: "web" | "worker") => {
      const p = runCli(["serve", "--role", role], env);
      procs.push(p);
      return { proc: p, url: await p.listening() };
    };
    const web = await start("web");
    let worker = await start("worker");

    // 70 % thin order events naming real sandbox orders (the built-in sync refetches them), 30 % reviews.
    const orders = sandbox.state.orders();
    const events = Array.from({ length: EVENTS }, (_, i) => {
      const id = `evt_chaos_${i}_${randomUUID().slice(0, 8)}`;
      const order = orders[i % orders.length]!;
      const body =
        i % 10 < 7
          ? { id, type: "order.status_changed", data: { id: order.id, restaurantId: order.restaurantId } }
          : { id, type: "review.created", data: { id: `rev_${i}`, restaurantId: "rest_1", rating: 1 + (i % 5) } };
      return { id, body: JSON.stringify(body) };
    });

    const faults: string[] = [];
    // The worker role handles events from the ingest stream: aim each kill at a moment its consumer holds read,
    // unacknowledged entries (mid-batch), and count what it left for the next worker to claim.
    const { stream, group } = redisKeys(prefix).ingest;
    const watcher = new Redis(redis.url, { maxRetriesPerRequest: null });
    const pendingOf = async () => ((await watcher.xpending(stream, group).catch(() => [0])) as [number])[0];
    const leftPending: number[] = [];
    const killWorker = async () => {
      for (let tries = 0; tries < 400 && (await pendingOf()) === 0; tries++);
      worker.proc.child.kill("SIGKILL");
      await worker.proc.exited;
      leftPending.push(await pendingOf());
      faults.push("worker SIGKILL");
      worker = await start("worker");
    };
    const started = Date.now();
    const report = await sendAll(`${web.url}/webhooks`, events, SECRET, {
      concurrency: 40,
      deadlineMs: 240_000,
      onAccepted: async (n) => {
        if (n === 2000 || n === 7500) await killWorker();
        if (n === 5000) {
          await redis!.stop();
          faults.push("redis stopped");
          // Away until the edge has seen it go (its /readyz answers 503), not for a set time.
          await waitFor(async () => (await fetch(`${web.url}/readyz`)).status === 503, { what: "the edge's /readyz to answer 503" });
          await redis!.start();
          faults.push("redis restarted");
        }
      },
    });
    expect(report.accepted.size).toBe(EVENTS);
    expect(faults).toEqual(["worker SIGKILL", "redis stopped", "redis restarted", "worker SIGKILL"]);

    const handled = () => (existsSync(record) ? readFileSync(record, "utf8").split("\n").filter(Boolean) : []);
    await waitFor(
      () => {
        const seen = new Set(handled());
        return [...report.accepted].every((id) => seen.has(id));
      },
      { timeoutMs: 180_000, intervalMs: 250, what: "every accepted event to be handled" },
    );
    const all = handled();
    const unique = new Set(all);
    const losses = [...report.accepted].filter((id) => !unique.has(id)).length;

    // The built-in sync stayed correct: every order it was told about equals the API's.
    const database = await createDatabase({ url: databaseUrl, dataDir: "", schema });
    try {
      const mirror = createPostgresMirror(database.db);
      await waitFor(
        async () => {
          const truth = new Map(sandbox!.state.orders().map((o) => [o.id, o]));
          const mirrored = await mirror.all("orders");
          return mirrored.length === truth.size && mirrored.every((o) => isDeepStrictEqual(o, truth.get(o.id)));
        },
        { timeoutMs: 120_000, intervalMs: 250, what: "the mirror to equal the sandbox" },
      );
      // As SQL holds it too: typed columns, amounts as decimals, line items.
      expect((await sqlMirror(database.db)).orders).toEqual(sandboxAsSql(sandbox.state).orders);
      const reviewIds = new Set(
        events.filter((e) => e.body.includes("review.created")).map((e) => (JSON.parse(e.body) as { data: { id: string } }).data.id),
      );
      expect((await mirror.all("reviews")).length).toBe(reviewIds.size);
    } finally {
      await database.db.schema.dropSchema(schema).ifExists().cascade().execute();
      await database.close();
    }

    await watcher.quit();
    const figures = {
      leftPendingByKills: leftPending,
      sent: EVENTS,
      accepted: report.accepted.size,
      attempts: report.attempts,
      non200: report.non200,
      handled: all.length,
      duplicatesHandled: all.length - unique.size,
      losses,
      faults,
      seconds: (Date.now() - started) / 1000,
    };
    console.log(`CHAOS no-loss ${JSON.stringify(figures)}`);
    expect(losses).toBe(0);

    // No secret reached any line these processes printed.
    const output = procs.map((p) => p.stdout() + p.stderr()).join("\n");
    for (const secret of [SECRET, ADMIN, sandbox.apiKey]) expect(output).not.toContain(secret);
  });
});
