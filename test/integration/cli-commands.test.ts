import { randomUUID } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { lockDataDir } from "../../src/mirror/data-dir-lock.js";
import { createPostgresMirror } from "../../src/mirror/postgres-store.js";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { databaseEnv, openDatabaseOfEnv } from "../helpers/postgres.js";
import { runCli, type CliProcess } from "../helpers/cli-process.js";
import { TEST_SECRET } from "../helpers/edge.js";
import { nextSettled } from "../helpers/job-events.js";
import { startService, type TestService } from "../helpers/service.js";

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
    const done = nextSettled(svc.service.worker!, "completed");
    proc = runCli(["trigger", "review.created", "--url", `${svc.url}/webhooks`, "--data", '{"id":"rev_cli","rating":2}'], {
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
    [["trigger", "order.created", "--bogus"], "Unknown option"],
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
    const database = databaseEnv(() => mkdtempSync(join(tmpdir(), "svc-backfill-")));
    proc = runCli(["backfill"], {
      ...database,
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: `test-backfill-${process.pid}`,
      API_BASE_URL: apiUrl,
      API_KEY: sandbox.apiKey,
      API_RATE: "1000",
    });
    expect((await proc.exited).code).toBe(0);
    expect(proc.stderr()).toContain("orders: 36 records");
    expect(JSON.parse(proc.stdout())).toEqual({ backfilled: { orders: 36, bookings: 15, "menu-items": 18 }, rejected: {} });
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
  it("with a list of signing secrets, the sandbox signs with the first and its deliveries are accepted", async () => {
    proc = runCli(["dev", "--port", "0", "--sandbox-port", "0", "--interval-ms", "20"], {
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
  });

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
  }, 90_000); // a new embedded database runs initdb first (several seconds on a busy machine)
});
