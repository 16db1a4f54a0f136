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
import { signatureVerifier } from "../../src/events/signature-schemes.js";
import { receiver, type Receiver } from "../helpers/alert-receiver.js";
import { cli } from "../helpers/cli-main.js";
import { startStack, type Stack } from "../helpers/stack.js";
import { databaseEnv, openDatabaseOfEnv } from "../helpers/postgres.js";
import { runCli, type CliProcess } from "../helpers/cli-process.js";
import { TEST_SECRET } from "../helpers/edge.js";
import { nextFinished } from "../helpers/job-events.js";
import { startService, type TestService } from "../helpers/service.js";
import { waitFor } from "../helpers/wait-for.js";
import { freePort, redisAnswers } from "../../src/redis/local-server.js";

let svc: TestService | undefined;
let sandbox: Sandbox | undefined;
let proc: CliProcess | undefined;
let stack: Stack | undefined;
let hooks: Receiver | undefined;
afterEach(async () => {
  await svc?.stop();
  await sandbox?.close();
  await stack?.stop();
  await hooks?.close();
  if (proc?.child.exitCode === null) proc.child.kill("SIGKILL");
  svc = sandbox = proc = stack = hooks = undefined;
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

describe("svc-webhooks trigger through a sandbox (SANDBOX_URL)", () => {
  it("refunds an order the sandbox holds, whose signed webhooks the service accepts and whose record it mirrors", async () => {
    stack = await startStack();
    const url = stack.sandbox.url!;
    const { code, stdout, stderr } = await cli(["trigger", "order.refunded"], { SANDBOX_URL: url });
    expect(stderr).toBe("");
    expect(code).toBe(0);
    const id = /refundOrder (ord_\w+)/.exec(stdout)?.[1];
    expect(stdout).toBe(
      `order.refunded through the sandbox at ${url}: createOrder ${id}, then refundOrder ${id}; the sandbox sends order.created and order.refunded to its webhook subscribers`,
    );
    expect(stack.sandbox.state.orders().find((o) => o.id === id)).toMatchObject({ status: "REFUNDED" });
    await stack.drained();
    // The service answers 200 only to a delivery whose signature it verified.
    const deliveries = [...stack.sandbox.deliveries].sort((a, b) => a.type.localeCompare(b.type));
    expect(deliveries.map((d) => [d.type, d.status])).toEqual([
      ["order.created", 200],
      ["order.refunded", 200],
    ]);
    for (const d of deliveries)
      expect(await stack.svc.service.eventLog.get(d.eventId)).toMatchObject({ status: "handled", payload: { data: { id } } });
    expect(await stack.svc.service.mirror.get("orders", id!)).toMatchObject({ status: "REFUNDED" });
  });

  it.each([
    ["order.created", ["createOrder"], { status: "PENDING" }],
    ["order.status_changed", ["createOrder", "updateOrderStatus"], { status: "CONFIRMED" }],
    ["order.refunded", ["createOrder", "refundOrder"], { status: "REFUNDED" }],
    ["booking.created", ["createBooking"], { status: "CONFIRMED" }],
    ["booking.status_changed", ["createBooking", "cancelBooking"], { status: "CANCELLED" }],
    ["review.created", ["createReview"], {}],
    ["menu_item.updated", ["updateMenuItem"], {}],
  ])("%s makes its change in the sandbox (%j), creating what it needs", async (type, actions, fields) => {
    sandbox = createSandbox();
    const url = await sandbox.listen();
    const { code, stdout } = await cli(["trigger", type, "--json"], { SANDBOX_URL: url });
    expect(code).toBe(0);
    const { done } = JSON.parse(stdout) as { done: { action: string; record: { id: string } }[] };
    expect(done.map((d) => d.action)).toEqual(actions);
    const last = done.at(-1)!.record;
    // What the CLI printed is what the sandbox holds now.
    expect(sandbox.state.history(last.id).at(-1)).toEqual({ ...last, ...fields });
  });

  it("changes a menu item's price a little when --data gives no patch, and only that", async () => {
    sandbox = createSandbox();
    const url = await sandbox.listen();
    const item = sandbox.state.menuItems().find((m) => m.restaurantId === "rest_2")!;
    const { code } = await cli(["trigger", "menu_item.updated", "--data", `{"id":"${item.id}"}`], { SANDBOX_URL: url });
    expect(code).toBe(0);
    const after = sandbox.state.menuItems().find((m) => m.id === item.id)!;
    expect(after).toEqual({ ...item, price: Math.round((item.price + 0.5) * 100) / 100, updatedAt: after.updatedAt });
  });

  it("says the sandbox's refusal in one line, exit 1: an order it does not hold", async () => {
    sandbox = createSandbox();
    const url = await sandbox.listen();
    const result = await cli(["trigger", "order.status_changed", "--data", '{"id":"ord_missing"}'], { SANDBOX_URL: url });
    expect(result).toEqual({
      code: 1,
      stdout: "",
      stderr: `svc-webhooks: the sandbox at ${url} refused updateOrderStatus: no order ord_missing (404 not_found)`,
    });
  });

  it("names the URL in one line, exit 1, when nothing answers there", async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const result = await cli(["trigger", "order.created"], { SANDBOX_URL: url });
    expect(result).toEqual({
      code: 1,
      stdout: "",
      stderr: `svc-webhooks: the sandbox at ${url} does not answer (POST /_sandbox/actions/createOrder: ECONNREFUSED): is it running? SANDBOX_URL or --sandbox names it`,
    });
  });

  it.each([
    [["--url", "http://127.0.0.1:3000/webhooks"], "--url is for a direct send"],
    [["--secret", "s", "--id", "evt_1"], "--secret, --id are for a direct send"],
    [["--scheme", "svc"], "--scheme is for a direct send"],
    [["--direct", "--sandbox", "http://127.0.0.1:4010"], "--direct sends a signed sample itself: it takes no --sandbox"],
    [["--sandbox", "not a url"], '--sandbox "not a url" is not a URL'],
  ])("refuses %j with a sandbox named, exit 2", async (flags, message) => {
    const result = await cli(["trigger", "order.created", ...flags], { SANDBOX_URL: "http://127.0.0.1:4010" });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
    expect(result.stderr.split("\n")).toHaveLength(1);
  });

  it("with --direct signs and sends a sample itself, and the sandbox changes nothing", async () => {
    sandbox = createSandbox();
    const url = await sandbox.listen();
    hooks = await receiver("/webhooks");
    const reviews = sandbox.state.reviews().length;
    const env = { SANDBOX_URL: url, SIGNING_SECRET: TEST_SECRET };
    const { code, stdout } = await cli(["trigger", "review.created", "--direct", "--url", hooks.url, "--json"], env);
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ status: 200, sent: { type: "review.created", data: { author: "trigger" } } });
    expect(hooks.got).toHaveLength(1);
    const [got] = hooks.got;
    const header = (name: string) => got!.headers[name.toLowerCase()] as string | undefined;
    expect(signatureVerifier("svc", [TEST_SECRET], 300).check(header, Date.now() / 1000)(Buffer.from(got!.body))).toMatchObject({
      secretIndex: 0,
    });
    expect(sandbox.state.reviews()).toHaveLength(reviews);
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
    expect(Object.keys(exported)).toEqual(
      expect.arrayContaining(["REDIS_URL", "API_BASE_URL", "API_KEY", "ADMIN_TOKEN", "PORT", "SANDBOX_URL"]),
    );
    expect(exported.API_BASE_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    // The CLI with only that environment asks this stack's service (the service holds the embedded database).
    const client = runCli(["replay", "--status", "failed", "--dry-run", "--json"], exported);
    expect((await client.exited).code, client.stderr()).toBe(0);
    expect(JSON.parse(client.stdout())).toEqual({ wouldQueue: 0 });
    // trigger with that environment acts through the stack's sandbox.
    expect(exported.SANDBOX_URL).toBe(exported.API_BASE_URL);
    const trigger = runCli(["trigger", "order.refunded", "--json"], exported);
    expect((await trigger.exited).code, trigger.stderr()).toBe(0);
    expect(JSON.parse(trigger.stdout())).toMatchObject({ sandbox: exported.SANDBOX_URL, done: [{}, { record: { status: "REFUNDED" } }] });
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
