import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { createEventLog } from "../../src/mirror/event-log.js";
import { KNOWN_EVENT_TYPES } from "../../src/events/catalog.js";
import { sampleEvent, TEST_SECRET } from "../helpers/edge.js";
import { openTestDatabase } from "../helpers/postgres.js";
import { startService, type TestService } from "../helpers/service.js";
import { cli } from "../helpers/cli-main.js";
import { waitFor } from "../helpers/wait-for.js";

/** One line, no stack frame: what every CLI error prints. */
function expectOneLine(stderr: string, text: string) {
  expect(stderr).toContain(text);
  expect(stderr.trim().split("\n")).toHaveLength(1);
  expect(stderr).not.toMatch(/^\s+at /m);
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** An HTTP server that is not the service, on a free port; counts what it is asked. */
async function unrelatedServer(): Promise<{ port: number; requests: () => number }> {
  let requests = 0;
  const server: Server = createServer((_req, res) => {
    requests++;
    res.writeHead(200, { "content-type": "text/html" }).end("<h1>another app</h1>");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanups.push(() => new Promise((r) => server.close(r)));
  return { port: (server.address() as AddressInfo).port, requests: () => requests };
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

const prefix = () => `test-clidep-${randomUUID().slice(0, 8)}`;

describe("the CLI acts on the deployment its environment names", () => {
  it("uses the stores of DATA_DIR and REDIS_URL and ignores another app listening on PORT", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "svc-clidep-"));
    const database = await openTestDatabase("embedded", { dataDir });
    await createEventLog(database.db).recordAttempt({
      id: "evt_failed_here",
      type: "guest.visited",
      payload: { id: "evt_failed_here" },
      status: "failed",
      handlers: {},
    });
    await database.close();
    const other = await unrelatedServer();
    const env = {
      DATA_DIR: dataDir,
      DATABASE_SCHEMA: database.schema,
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: prefix(),
      PORT: String(other.port),
      API_BASE_URL: "http://127.0.0.1:9",
      API_KEY: "svc_live_cli_deployment",
    };

    const dryRun = await cli(["replay", "--status", "failed", "--dry-run"], env);
    expect(dryRun.code, dryRun.stderr).toBe(0);
    expect(dryRun.stdout).toContain("evt_failed_here");
    expect(dryRun.stdout).toContain("1 event would be replayed");
    // For scripts: stdout is the one JSON document; the list of events goes to stderr.
    const dryRunJson = await cli(["replay", "--status", "failed", "--dry-run", "--json"], env);
    expect(dryRunJson.code, dryRunJson.stderr).toBe(0);
    expect(JSON.parse(dryRunJson.stdout)).toEqual({ wouldQueue: 1 });
    expect(dryRunJson.stderr).toContain("evt_failed_here");
    const reconcile = await cli(["reconcile", "--json"], env);
    expect(reconcile.code, reconcile.stderr).toBe(0);
    expect(JSON.parse(reconcile.stdout)).toEqual({ job: expect.any(String) as string, runs: "now" });
    // For people, the same answer in a sentence (asked again, it is the same job).
    const said = await cli(["reconcile"], env);
    expect(said.stdout).toBe(`reconciliation queued as job ${(JSON.parse(reconcile.stdout) as { job: string }).job}; it runs now`);
    expect(other.requests()).toBe(0);
  }, 60_000);

  it("replays and reads through the server of the running service that holds the embedded database", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "svc-clidep-held-"));
    const svc: TestService = await startService({}, [], { dataDir });
    cleanups.push(() => svc.stop());
    const event = sampleEvent({ type: "guest.visited", data: {} });
    expect((await svc.deliver(event)).status).toBe(200);
    await waitFor(async () => (await svc.service.eventLog.get(event.id))?.status === "handled", { what: "the event handled" });
    const other = await unrelatedServer();
    // No ADMIN_TOKEN and no --url: the service is found through the store it holds, not a port.
    const env = {
      DATA_DIR: dataDir,
      DATABASE_SCHEMA: svc.database.schema,
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: svc.prefix,
      PORT: String(other.port),
    };

    const replay = await cli(["replay", "--id", event.id, "--json"], env);
    expect(replay.code, replay.stderr).toBe(0);
    expect(JSON.parse(replay.stdout)).toMatchObject({ event: event.id, replay: { id: expect.stringMatching(/^replay-/) as string } });
    await waitFor(async () => (await svc.service.eventLog.get(event.id))?.attempts === 2, { what: "the replay's attempt" });

    const counted = await cli(["replay", "--type", "guest.*", "--dry-run", "--json"], env);
    expect(counted.code, counted.stderr).toBe(0);
    expect(JSON.parse(counted.stdout)).toEqual({ wouldQueue: 1 });

    const missing = await cli(["replay", "--id", "evt_nowhere"], env);
    expect(missing.code).toBe(1);
    expectOneLine(missing.stderr, "event_not_found: no event evt_nowhere");

    // Reads go through the same server.
    const shown = await cli(["events", "show", event.id], env);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout.startsWith(`event ${event.id} (guest.visited), received `)).toBe(true);
    const shownJson = await cli(["events", "show", event.id, "--json"], env);
    expect(JSON.parse(shownJson.stdout)).toMatchObject({ id: event.id, type: "guest.visited" });
    const noRecord = await cli(["records", "show", "orders", "ord_nowhere"], env);
    expect(noRecord.code).toBe(1);
    expectOneLine(noRecord.stderr, "record_not_found: nothing is known of orders ord_nowhere");

    // A backfill is the service's workers' to run: the CLI asks for it on the sync queue.
    const backfill = await cli(["backfill", "--kinds", "orders", "--json"], {
      ...env,
      API_BASE_URL: "http://127.0.0.1:9",
      API_KEY: "svc_live_cli_held",
    });
    expect(backfill.code, backfill.stderr).toBe(0);
    expect(JSON.parse(backfill.stdout)).toEqual({ job: expect.any(String) as string });
    expect(other.requests()).toBe(0);
  }, 90_000);

  it("refuses a dry run on a DATA_DIR that holds no database, creating nothing", async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), "svc-clidep-none-")), "not-there");
    const dryRun = await cli(["replay", "--status", "failed", "--dry-run"], { DATA_DIR: dataDir, REDIS_URL: inject("redisUrl") });
    expect(dryRun.code).toBe(1);
    expectOneLine(dryRun.stderr, `no embedded database in DATA_DIR ${dataDir}`);
    expect(existsSync(dataDir)).toBe(false);
  });

  it("fails a backfill on a mistyped DATA_DIR before creating a database there (no API, then no Redis)", async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), "svc-clidep-typo-")), "not-there");
    const noApi = await cli(["backfill"], { DATA_DIR: dataDir, REDIS_URL: inject("redisUrl") });
    expect(noApi.code).toBe(2);
    expectOneLine(noApi.stderr, "backfill needs API_BASE_URL and API_KEY");
    expect(existsSync(dataDir)).toBe(false);

    const noRedis = await cli(["backfill"], {
      DATA_DIR: dataDir,
      REDIS_URL: `redis://127.0.0.1:${await closedPort()}`,
      API_BASE_URL: "http://127.0.0.1:1",
      API_KEY: "svc_live_test_key_for_typo_dir_0001",
    });
    expect(noRedis.code).toBe(1);
    expectOneLine(noRedis.stderr, "does not answer");
    expect(existsSync(dataDir)).toBe(false);
  });

  it("asks a service at --url only with ADMIN_TOKEN, in one line", async () => {
    const other = await unrelatedServer();
    const noToken = await cli(["reconcile", "--url", `http://127.0.0.1:${other.port}`], {});
    expect(noToken.code).toBe(1);
    expectOneLine(noToken.stderr, "set ADMIN_TOKEN");
    expect(other.requests()).toBe(0);
  });
});

describe("svc-webhooks trigger", () => {
  it("refuses an unknown event type with exit 2, listing the known ones", async () => {
    const run = await cli(["trigger", "order.create"], { SIGNING_SECRET: TEST_SECRET });
    expect(run.code).toBe(2);
    expectOneLine(run.stderr, `unknown event type "order.create"; known types: ${KNOWN_EVENT_TYPES.join(", ")}`);
  });

  it("says in one line that nothing answers at the URL it tried", async () => {
    const url = `http://127.0.0.1:${await closedPort()}/webhooks`;
    const run = await cli(["trigger", "order.created", "--url", url], { SIGNING_SECRET: TEST_SECRET });
    expect(run.code).toBe(1);
    expectOneLine(run.stderr, `POST ${url} failed (ECONNREFUSED)`);
  });
});
