import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { embeddedDirectory, lockDataDir } from "../../src/mirror/embedded-server.js";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { runCli, type CliProcess } from "../helpers/cli-process.js";
import { databaseEnv } from "../helpers/postgres.js";
import { startRedisServer, type RedisServer } from "../helpers/redis-server.js";
import { waitFor } from "../helpers/wait-for.js";

// The backfill's budget lives in a Redis of the test's own, which the test stops and restarts.
let sandbox: Sandbox | undefined;
let redis: RedisServer | undefined;
let proc: CliProcess | undefined;
afterEach(async () => {
  if (proc?.child.exitCode === null) proc.child.kill("SIGKILL");
  await sandbox?.close();
  await redis?.destroy();
  sandbox = redis = proc = undefined;
});

async function backfill(extra: Record<string, string> = {}) {
  sandbox = createSandbox({ history: { orders: 1500, days: 30 } });
  const apiUrl = await sandbox.listen();
  redis = await startRedisServer();
  proc = runCli(["backfill", "--kinds", "orders", "--json"], {
    ...databaseEnv(),
    REDIS_URL: redis.url,
    QUEUE_PREFIX: "test-backfill-stop",
    API_BASE_URL: apiUrl,
    API_KEY: sandbox.apiKey,
    API_RATE: "600",
    ...extra,
  });
  const p = proc;
  // The first page is saved: the sweep runs.
  await waitFor(() => p.stderr().includes("orders: 100 records"), { timeoutMs: 20_000, what: "the first page" });
  return p;
}

describe("backfill when Redis loses its data, and one Ctrl-C", () => {
  it("goes on after a Redis restart that lost its data, saying while Redis is away", async () => {
    const p = await backfill();
    await redis!.stop(); // no persistence: its data is gone
    await redis!.start();
    const { code } = await p.exited;
    expect({ code, stderr: p.stderr() }).toMatchObject({ code: 0 });
    expect(JSON.parse(p.stdout())).toMatchObject({ backfilled: { orders: 1500 }, state: "complete" });
    expect(p.stderr()).toContain("does not answer: waiting for it");
  });

  it("ends within a few seconds at one Ctrl-C while its budget waits for a Redis that does not come back", async () => {
    const p = await backfill();
    await redis!.stop();
    await waitFor(() => p.stderr().includes("does not answer: waiting for it"), { what: "the outage line" });
    p.child.kill("SIGINT");
    const { code } = await p.exited;
    expect({ code, stderr: p.stderr() }).toMatchObject({ code: 130 });
    expect(p.stderr()).toContain("stopped: run backfill again to go on where it stopped");
    expect(JSON.parse(p.stdout())).toMatchObject({ state: "interrupted" });
  });

  it("ends within a few seconds at one Ctrl-C while a read waits for an API that holds it", async () => {
    const p = await backfill({ API_TIMEOUT_MS: "120000" });
    sandbox!.faults.add({ path: "/api/v1/orders", delayMs: 120_000 });
    const asked = sandbox!.requestLog.length;
    // The sandbox logs a request as it arrives (status 0 until answered): the held read is out.
    await waitFor(() => sandbox!.requestLog.slice(asked).some((r) => r.status === 0), { what: "a held read" });
    p.child.kill("SIGINT");
    const { code } = await p.exited;
    expect({ code, stderr: p.stderr() }).toMatchObject({ code: 130 });
    expect(p.stderr()).not.toMatch(/\n\s+at /); // one line, never a stack
  });
});

describe("a DATA_DIR another process holds", () => {
  it("replay, where the holder runs no server, says so in one line and changes nothing", async () => {
    // The embedded database is held by "a service" (this process) that has not started its server.
    const dataDir = mkdtempSync(join(tmpdir(), "svc-replay-held-"));
    mkdirSync(embeddedDirectory(dataDir));
    const lock = await lockDataDir(dataDir);
    redis = await startRedisServer();
    try {
      const p = (proc = runCli(["replay", "--id", "evt_waits"], {
        DATA_DIR: dataDir,
        REDIS_URL: redis.url,
        QUEUE_PREFIX: "test-replay-held",
      }));
      const { code } = await p.exited;
      expect({ code, stderr: p.stderr() }).toEqual({
        code: 1,
        stderr: `svc-webhooks: the embedded database in ${dataDir} is held by another process (pid ${process.pid} as it recorded) whose server is not ready: let that service start, or stop it, and run this again\n`,
      });
      const connection = new Redis(redis.url);
      expect(await connection.keys("*")).toEqual([]);
      connection.disconnect();
    } finally {
      lock.release();
    }
  }, 60_000);
});
