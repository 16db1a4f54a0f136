import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, statSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { createPostgresMirror } from "../../src/mirror/mirror-store.js";
import { lockDataDir } from "../../src/mirror/embedded-server.js";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { databaseEnv, openDatabaseOfEnv } from "../helpers/postgres.js";
import { runCli, type CliProcess } from "../helpers/cli-process.js";
import { TEST_SECRET } from "../helpers/edge.js";
import { nextFinished } from "../helpers/job-events.js";
import { startService, type TestService } from "../helpers/service.js";
import { waitFor } from "../helpers/wait-for.js";
import { redisAnswers } from "../../src/redis/local-server.js";

let svc: TestService | undefined;
let sandbox: Sandbox | undefined;
let proc: CliProcess | undefined;
afterEach(async () => {
  await svc?.stop();
  await sandbox?.close();
  if (proc?.child.exitCode === null) proc.child.kill("SIGKILL");
  svc = sandbox = proc = undefined;
});

describe("svc-webhooks trigger", () => {
  it("sends a signed sample event that the service accepts and stores", async () => {
    svc = await startService();
    const done = nextFinished(svc.service.worker!, "completed");
    proc = runCli(["trigger", "review.created", "--json", "--url", `${svc.url}/webhooks`, "--data", '{"id":"rev_cli","rating":2}'], {
      SIGNING_SECRET: TEST_SECRET,
    });
    expect((await proc.exited).code).toBe(0);
    expect(JSON.parse(proc.stdout())).toMatchObject({ status: 200, sent: { type: "review.created", data: { id: "rev_cli", rating: 2 } } });
    await done;
    expect(await svc.service.mirror.get("reviews", "rev_cli")).toMatchObject({ rating: 2, restaurantId: "rest_1" });
  });

  it.each([
    [["trigger"], "one event type"],
    [["trigger", "order.created", "--data", "[1]"], "--data must be a JSON object"],
    [["trigger", "order.created", "--bogus"], "unknown option --bogus"],
    [["nope"], 'unknown command "nope"'],
  ])("exits 2 with a clear message for %j", async (args, message) => {
    proc = runCli(args, { SIGNING_SECRET: TEST_SECRET });
    expect((await proc.exited).code).toBe(2);
    expect(proc.stderr()).toContain(message);
  });

  it("refuses to sign without a secret", async () => {
    proc = runCli(["trigger", "order.created"], {});
    expect((await proc.exited).code).toBe(2);
    expect(proc.stderr()).toContain("SIGNING_SECRET");
  });
});

describe("svc-webhooks backfill", () => {
  it("sweeps every order, booking and menu item into the mirror, showing progress", async () => {
    sandbox = createSandbox();
    const apiUrl = await sandbox.listen();
    const database = databaseEnv();
    proc = runCli(["backfill", "--json"], {
      ...database,
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: `test-backfill-${process.pid}`,
      API_BASE_URL: apiUrl,
      API_KEY: sandbox.apiKey,
      API_RATE: "1000",
    });
    expect((await proc.exited).code).toBe(0);
    expect(proc.stderr()).toContain("orders: 36 records");
    expect(JSON.parse(proc.stdout())).toEqual({
      backfilled: { orders: 36, bookings: 15, "menu-items": 18 },
      rejected: {},
      state: "complete",
    });
    // The process migrated its database and wrote the mirror there; read it back as the service would.
    const db = await openDatabaseOfEnv(database);
    try {
      const mirrored = await createPostgresMirror(db.db).all("orders");
      expect(mirrored.map((o) => o.id).sort()).toEqual(
        sandbox.state
          .orders()
          .map((o) => o.id)
          .sort(),
      );
    } finally {
      await db.close();
    }
    expect(proc.stdout() + proc.stderr()).not.toContain(sandbox.apiKey);
  });
});

describe("svc-webhooks dev", () => {
  // Dev keeps its settings beside its database: in a directory of the test's own, never the
  // checkout's ./.data/dev (which an `npm run dev` beside the tests holds).
  const devDataEnv = () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-dev-data-"));
    return { ...databaseEnv(), DATA_DIR: dir };
  };

  it("with a list of signing secrets, the sandbox signs with the first and its deliveries are accepted", async () => {
    proc = runCli(["dev", "--port", "0", "--sandbox-port", "0", "--interval-ms", "20", "--verbose"], {
      ...devDataEnv(),
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: `test-dev-${randomUUID().slice(0, 8)}`,
      SIGNING_SECRET: "whsec_dev_newest_0123456789,whsec_dev_oldest_0123456789",
    });
    // The first request the service logs is the sandbox's first webhook delivery.
    const delivery = await proc.waitForLog("request");
    expect(delivery).toMatchObject({ method: "POST", path: "/webhooks", status: 200 });
    proc.child.kill("SIGTERM");
    expect((await proc.exited).code).toBe(0);
    expect(proc.stdout()).not.toMatch(/whsec_dev_(newest|oldest)/); // the log, not the banner
  }, 120_000);

  it("prints the console URL, the secrets it generated and an export block with which the CLI reaches the stack", async () => {
    const data = devDataEnv();
    const running = runCli(["dev", "--port", "0", "--sandbox-port", "0", "--no-simulate"], {
      ...data,
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: `test-dev-${randomUUID().slice(0, 8)}`,
      SIGNING_SECRET: "whsec_dev_chosen_0123456789",
    });
    proc = running;
    const banner = await waitFor(() => running.stderr().includes("Ctrl-C stops everything.") && running.stderr(), {
      timeoutMs: 120_000,
      what: "the dev banner",
    });
    expect(banner).toMatch(/console +http:\/\/127\.0\.0\.1:\d+\/console/);
    expect(banner).toContain(`ADMIN_TOKEN generated now in ${join(data.DATA_DIR, "dev-settings.json")}`);
    expect(banner).not.toContain("SIGNING_SECRET and ADMIN_TOKEN generated");
    const exported = Object.fromEntries(
      [...banner.matchAll(/^ {2}export (.+)$/gm)].flatMap((m) => m[1]!.split(" ").map((pair) => pair.split("=", 2) as [string, string])),
    );
    expect(Object.keys(exported)).toEqual(expect.arrayContaining(["REDIS_URL", "API_BASE_URL", "API_KEY", "ADMIN_TOKEN", "PORT"]));
    expect(exported.API_BASE_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    // The CLI with only that environment asks this stack's service (the service holds the embedded database).
    const client = runCli(["replay", "--status", "failed", "--dry-run", "--json"], exported);
    expect((await client.exited).code, client.stderr()).toBe(0);
    expect(JSON.parse(client.stdout())).toEqual({ wouldQueue: 0 });
    running.child.kill("SIGTERM");
    expect((await running.exited).code).toBe(0);
    // The next run's export block holds the same token: it is kept for it, readable by its owner only.
    const kept = join(data.DATA_DIR, "dev-settings.json");
    expect(JSON.parse(readFileSync(kept, "utf8"))).toMatchObject({ adminToken: exported.ADMIN_TOKEN });
    expect(statSync(kept).mode & 0o777).toBe(0o600);
  }, 240_000);

  it("that fails to start (its port is taken) says so in one line and leaves no redis-server behind", async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, "127.0.0.1", r));
    const port = (taken.address() as AddressInfo).port;
    try {
      const noRedis = createServer();
      await new Promise<void>((r) => noRedis.listen(0, "127.0.0.1", r));
      const closedRedis = `redis://127.0.0.1:${(noRedis.address() as AddressInfo).port}`;
      await new Promise((r) => noRedis.close(r));
      proc = runCli(["dev", "--port", String(port), "--sandbox-port", "0", "--no-simulate"], { ...devDataEnv(), REDIS_URL: closedRedis });
      expect((await proc.exited).code).toBe(1);
      const own = /redis-server started at (redis:\/\/\S+)/.exec(proc.stderr())?.[1];
      expect(own, proc.stderr()).toBeDefined();
      expect(proc.stderr()).toContain(`port ${port} is in use`);
      expect(proc.stderr()).not.toMatch(/^\s+at /m);
      expect(await redisAnswers(own!)).toBe(false);
    } finally {
      await new Promise((r) => taken.close(r));
    }
  }, 180_000);

  it("stops everything on Ctrl-C (SIGINT to its whole process group), closing the embedded database", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "svc-dev-data-"));
    proc = runCli(
      ["dev", "--port", "0", "--sandbox-port", "0", "--interval-ms", "20"],
      { DATA_DIR: dataDir, QUEUE_PREFIX: `test-dev-${randomUUID().slice(0, 8)}`, LOG_LEVEL: "debug" },
      { ownProcessGroup: true },
    );
    await proc.waitForLog("mirror changes recorded");
    process.kill(-proc.child.pid!, "SIGINT"); // as a terminal does: the service, tsx and its redis-server alike
    expect((await proc.exited).code).toBe(0);
    // The database was closed, not abandoned: the next start takes its lock.
    (await lockDataDir(dataDir)).release();
    // Beside it, the sandbox saved its records at stop, for the next run to continue from (sandbox-restart.test.ts).
    const kept = JSON.parse(readFileSync(join(dataDir, "sandbox-state.json"), "utf8")) as { orders: unknown[] };
    expect(kept.orders.length).toBeGreaterThan(0);
  }, 90_000); // a new embedded database runs initdb first (several seconds on a busy machine)
});
