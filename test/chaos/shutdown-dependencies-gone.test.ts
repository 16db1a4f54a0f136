import { execFile, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { signPayload } from "../../src/events/envelope.js";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { TEST_SECRET } from "../helpers/edge.js";
import { waitFor } from "../helpers/wait-for.js";
import { runCli, type CliProcess } from "../helpers/cli-process.js";
import { findPostgresBin, startPostgresServer, type PostgresServer } from "../helpers/postgres-server.js";
import { startRedisServer, type RedisServer } from "../helpers/redis-server.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SHUTDOWN_TIMEOUT_MS = 3000;
// Every stop ends within SHUTDOWN_TIMEOUT_MS + 5 s (service.ts EXIT_GRACE_MS) from the signal: a
// process still stopping then is ended by its own hard stop, with exit code 1 and "shutdown did
// not finish in time" (serve.ts). So exit 0 after "stopped" is a stop inside the bound, told by the
// process itself rather than by this test's clock.
const BOUND_S = SHUTDOWN_TIMEOUT_MS / 1000 + 5;

let proc: CliProcess | undefined;
let redis: RedisServer | undefined;
let postgres: PostgresServer | undefined;
let sandbox: Sandbox | undefined;
afterEach(async () => {
  await sandbox?.close();
  sandbox = undefined;
  if (proc?.child.exitCode === null) proc.child.kill("SIGKILL");
  await redis?.destroy();
  await postgres?.destroy();
  proc = redis = postgres = undefined;
});

/** SIGTERM, then how the process ended. */
async function terminate(p: CliProcess) {
  p.child.kill("SIGTERM");
  return p.exited;
}

/** Ended on its own, inside the bound: exit 0 after its "stopped" line, never its hard stop. */
async function expectStoppedInTime(p: CliProcess, ended: { code: number | null; signal: NodeJS.Signals | null }) {
  expect({ code: ended.code, signal: ended.signal, tail: ended.code === 0 ? "" : p.stdout().slice(-2000) }).toEqual({
    code: 0,
    signal: null,
    tail: "",
  });
  await p.waitForLog("stopped");
  expect(p.stdout()).not.toContain("shutdown did not finish in time");
}

const serveEnv = (redisUrl: string) => ({
  REDIS_URL: redisUrl,
  PORT: "0",
  HOST: "127.0.0.1",
  SIGNING_SECRET: TEST_SECRET,
  SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
  RECONCILE_INTERVAL_SECONDS: "0",
});

describe("SIGTERM ends the service when what it depends on is gone", () => {
  it(`with Redis gone: every close step finishes within its deadline, exit 0 within ${BOUND_S} s`, async () => {
    redis = await startRedisServer();
    proc = runCli(["serve"], { ...serveEnv(redis.url), DATA_DIR: mkdtempSync(join(tmpdir(), "svc-stop-redis-")) });
    await proc.listening();
    const { url } = redis;
    await redis.destroy();
    redis = undefined;
    await proc.waitForLog(`Redis at ${url} does not answer (ECONNREFUSED): is it running, and is REDIS_URL set to it? Retrying every 2 s`);
    await expectStoppedInTime(proc, await terminate(proc));
  });

  it(`with an upstream read the API holds: aborts it at the deadline and exits 0 within ${BOUND_S} s`, async () => {
    redis = await startRedisServer();
    sandbox = createSandbox();
    const apiUrl = await sandbox.listen();
    proc = runCli(["serve"], {
      ...serveEnv(redis.url),
      DATA_DIR: mkdtempSync(join(tmpdir(), "svc-stop-upstream-")),
      API_BASE_URL: apiUrl,
      API_KEY: sandbox.apiKey,
      // Far past the bound: only the shutdown's abort can end the read in time.
      API_TIMEOUT_MS: "120000",
      SYNC_DEBOUNCE_MS: "0",
    });
    const url = await proc.listening();
    sandbox.faults.add({ path: "/api/v1/", delayMs: 120_000 });
    const asked = sandbox.requestLog.length;
    // A refresh of the order the webhook names reads the API, which holds the read.
    const body = JSON.stringify({ id: "evt_stop_hung", type: "order.created", data: { id: "ord_1", restaurantId: "rest_1" } });
    const res = await fetch(`${url}/webhooks`, {
      method: "POST",
      body,
      headers: { "content-type": "application/json", "x-svc-signature": signPayload(body, TEST_SECRET) },
    });
    expect(res.status).toBe(200);
    await waitFor(() => sandbox!.requestLog.slice(asked).some((r) => r.status === 0), { what: "a held upstream read" });
    await expectStoppedInTime(proc, await terminate(proc));
    // The held job is left to run again either way the race between the read's abort and the
    // workers' close ends: still active at the deadline, or failed by the abort with a retry due.
    const logs = proc
      .stdout()
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as { msg?: string; err?: string; job?: string });
    expect(
      logs.some(
        (l) =>
          l.msg === "active jobs did not finish before the shutdown deadline; they will run again" ||
          (l.msg === "job failed, will retry" && l.job === "refresh" && (l.err ?? "").includes("aborted")),
      ),
      proc.stdout().slice(-2000),
    ).toBe(true);
  });

  it("with no Redis ever: a start that waits for it ends at SIGTERM, after SHUTDOWN_TIMEOUT_MS", async () => {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `redis://127.0.0.1:${(server.address() as AddressInfo).port}`;
    await new Promise((r) => server.close(r));
    proc = runCli(["serve"], { ...serveEnv(url), DATA_DIR: mkdtempSync(join(tmpdir(), "svc-stop-noredis-")) });
    await proc.waitForLog(`Redis at ${url} does not answer (ECONNREFUSED): is it running, and is REDIS_URL set to it? Retrying every 2 s`);
    const { code, signal } = await terminate(proc);
    expect({ code, signal }).toEqual({ code: 1, signal: null });
    // Only the start's own timer (SHUTDOWN_TIMEOUT_MS from the signal, serve.ts) writes this line.
    await proc.waitForLog("stopped before the start finished (it waits for Redis or the database): exiting");
  });

  it(`with the database server gone: exit 0 within ${BOUND_S} s`, async () => {
    redis = await startRedisServer();
    postgres = await startPostgresServer(await findPostgresBin());
    proc = runCli(["serve"], { ...serveEnv(redis.url), DATABASE_URL: postgres.url });
    await proc.listening();
    await postgres.stop();
    await expectStoppedInTime(proc, await terminate(proc));
  });
});

describe("npm start", () => {
  it("passes SIGTERM to the service: npm and node both end, no node process is left behind", async () => {
    await promisify(execFile)("npx", ["tsc", "-p", "tsconfig.build.json"], { cwd: ROOT });
    redis = await startRedisServer();
    const npm = spawn("npm", ["start"], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        ...serveEnv(redis.url),
        DATA_DIR: mkdtempSync(join(tmpdir(), "svc-npm-start-")),
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    npm.stdout.on("data", (d: Buffer) => (out += d.toString()));
    const npmExited = new Promise<number | null>((r) => npm.once("exit", (code) => r(code)));
    const pid = await new Promise<number>((resolve, reject) => {
      npm.stdout.on("data", () => {
        const listening = out.split("\n").find((l) => l.includes('"msg":"listening"'));
        if (listening) resolve((JSON.parse(listening) as { pid: number }).pid);
      });
      void npmExited.then(() => reject(new Error(`npm start exited before listening: ${out}`)));
    });
    npm.kill("SIGTERM");
    expect(await npmExited).toBe(0);
    expect(out).toContain('"msg":"stopped"');
    // The service's process (pid from its own log line) is gone, not re-parented and still holding the port.
    expect(() => process.kill(pid, 0)).toThrow();
  });
});
