import { randomUUID } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Queue } from "bullmq";
import { afterEach, describe, expect, inject, it } from "vitest";
import { createEventLog } from "../../src/mirror/event-log.js";
import { migrateToLatest } from "../../src/mirror/database.js";
import { EVENTS_QUEUE, SYNC_QUEUE } from "../../src/queue/events-queue.js";
import { createRedisConnection } from "../../src/redis/redis.js";
import { signPayload } from "../../src/events/envelope.js";
import { runCli, type CliProcess } from "../helpers/cli-process.js";
import { sampleEvent, TEST_SECRET } from "../helpers/edge.js";
import { openDatabaseOfEnv, seeded } from "../helpers/postgres.js";
import { waitFor } from "../helpers/wait-for.js";

const TOKEN = "cli-client-admin-token-0123456789";
const procs: CliProcess[] = [];
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const p of procs.splice(0)) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
  for (const c of cleanups.splice(0)) await c();
});

const cli = (args: string[], env: Record<string, string | undefined>) => {
  const p = runCli(args, env);
  procs.push(p);
  return p;
};

/** A port nothing listens on (taken and released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

/** One line on stderr, no stack frame: what a user error prints. */
function expectOneLine(stderr: string, text: string) {
  expect(stderr).toContain(text);
  expect(stderr.trim().split("\n")).toHaveLength(1);
  expect(stderr).not.toMatch(/^\s+at /m);
}

const prefix = () => `test-cli-${randomUUID().slice(0, 8)}`;

describe("replay --id through the running service", () => {
  it("replays an event of a service running on the embedded store, with no lock error", async () => {
    const dataDir = seeded(mkdtempSync(join(tmpdir(), "svc-cli-embedded-")));
    const env = {
      DATA_DIR: dataDir,
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: prefix(),
      ADMIN_TOKEN: TOKEN,
      SIGNING_SECRET: TEST_SECRET,
    };
    const serve = cli(["serve"], { ...env, HOST: "127.0.0.1", PORT: "0" });
    const url = await serve.listening();
    const event = sampleEvent({ type: "guest.visited", data: {} });
    const body = JSON.stringify(event);
    const sent = await fetch(`${url}/webhooks`, {
      method: "POST",
      body,
      headers: { "content-type": "application/json", "x-svc-signature": signPayload(body, TEST_SECRET) },
    });
    expect(sent.status).toBe(200);
    const logged = async () => {
      const res = await fetch(`${url}/events/${event.id}`, { headers: { authorization: `Bearer ${TOKEN}` } });
      return res.ok ? ((await res.json()) as { attempts: number; status: string }) : undefined;
    };
    await waitFor(async () => (await logged())?.status === "handled", { what: "the event handled", timeoutMs: 60_000 });

    const replay = cli(["replay", "--id", event.id, "--url", url, "--json"], env);
    expect((await replay.exited).code, replay.stderr()).toBe(0);
    expect(JSON.parse(replay.stdout())).toMatchObject({ event: event.id, replay: { id: expect.stringMatching(/^replay-/) as string } });
    expect(replay.stderr()).not.toContain("DataDirLocked");
    await waitFor(async () => (await logged())?.attempts === 2, { what: "the replay's attempt", timeoutMs: 30_000 });

    const missing = cli(["replay", "--id", "evt_nowhere", "--url", url], env);
    expect((await missing.exited).code).toBe(1);
    expectOneLine(missing.stderr(), "event_not_found");

    // The reads for people go the same way: the event as GET /events/{id} answers it, told in sentences.
    const shown = cli(["events", "show", event.id, "--url", url], env);
    expect((await shown.exited).code, shown.stderr()).toBe(0);
    expect(shown.stdout()).toMatch(/^event \S+ \(guest\.visited\), received \S+Z: handled after 2 attempts/);
    const shownJson = cli(["events", "show", event.id, "--url", url, "--json"], env);
    expect((await shownJson.exited).code, shownJson.stderr()).toBe(0);
    expect(JSON.parse(shownJson.stdout())).toMatchObject({ id: event.id, status: "handled", attempts: 2 });

    const wrongToken = cli(["replay", "--id", event.id, "--url", url], { ...env, ADMIN_TOKEN: "not-the-token-of-this-service" });
    expect((await wrongToken.exited).code).toBe(1);
    expectOneLine(wrongToken.stderr(), "refused ADMIN_TOKEN (401)");

    serve.child.kill("SIGTERM");
    expect((await serve.exited).code).toBe(0);
  }, 300_000);
});

// Each CLI process starts from the TypeScript sources (several seconds on a busy machine): generous timeouts.
describe("replay and reconcile without a service", () => {
  it("open the stores the environment names themselves", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "svc-cli-direct-"));
    const queuePrefix = prefix();
    const database = await openDatabaseOfEnv({ DATA_DIR: dataDir });
    try {
      await migrateToLatest(database);
      await createEventLog(database.db).recordAttempt({
        id: "evt_direct",
        type: "guest.visited",
        payload: { id: "evt_direct" },
        status: "failed",
        handlers: {},
      });
    } finally {
      await database.close();
    }
    const env = {
      DATA_DIR: dataDir,
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: queuePrefix,
      API_BASE_URL: "http://127.0.0.1:9",
      API_KEY: "svc_live_cli_direct",
    };
    const replay = cli(["replay", "--id", "evt_direct", "--json"], env);
    expect((await replay.exited).code, replay.stderr()).toBe(0);
    expect(JSON.parse(replay.stdout())).toMatchObject({ event: "evt_direct" });
    const reconcile = cli(["reconcile", "--json"], env);
    expect((await reconcile.exited).code, reconcile.stderr()).toBe(0);
    const { job } = JSON.parse(reconcile.stdout()) as { job: string };

    const redis = createRedisConnection(inject("redisUrl"), "worker");
    const events = new Queue(EVENTS_QUEUE, { connection: redis, prefix: queuePrefix });
    const sync = new Queue(SYNC_QUEUE, { connection: redis, prefix: queuePrefix });
    cleanups.push(async () => {
      await events.close();
      await sync.close();
      await redis.quit();
    });
    const waiting = await events.getWaiting();
    expect(waiting.map((j) => (j.data as { id: string }).id)).toEqual(["evt_direct"]);
    expect((await sync.getWaiting()).map((j) => [j.id, j.name])).toEqual([[job, "reconcile-active"]]);
  }, 180_000);
});

describe("one-line errors, in bounded time", () => {
  it("for a Redis that does not answer (replay list, reconcile)", async () => {
    const redisUrl = `redis://127.0.0.1:${await closedPort()}`;
    const list = cli(["replay", "list"], { REDIS_URL: redisUrl });
    expect((await list.exited).code).toBe(1);
    expectOneLine(list.stderr(), `Redis at redis://127.0.0.1:`);
    expect(list.stderr()).toContain("ECONNREFUSED");
    const reconcile = cli(["reconcile"], { REDIS_URL: redisUrl });
    expect((await reconcile.exited).code).toBe(1);
    expectOneLine(reconcile.stderr(), "does not answer");
  }, 120_000);

  it("for a URL that is not one, or not the service, and for a bad flag", async () => {
    const notUrl = cli(["replay", "--id", "evt_1", "--url", "localhost:3000"], {});
    expect((await notUrl.exited).code).toBe(2);
    expectOneLine(notUrl.stderr(), "is not an http(s) URL");

    const other = createServer((_req, res) => res.writeHead(404, { "content-type": "text/html" }).end("<h1>nope</h1>"));
    await new Promise<void>((r) => other.listen(0, "127.0.0.1", r));
    cleanups.push(() => new Promise((r) => other.close(() => r())));
    const wrong = cli(["replay", "--id", "evt_1", "--url", `http://127.0.0.1:${(other.address() as AddressInfo).port}`], {
      ADMIN_TOKEN: TOKEN,
    });
    expect((await wrong.exited).code).toBe(1);
    expectOneLine(wrong.stderr(), "is not an svc-webhooks service (POST /events/evt_1/replay answered 404); check --url");

    const noToken = cli(["reconcile", "--url", `http://127.0.0.1:${(other.address() as AddressInfo).port}`], {});
    expect((await noToken.exited).code).toBe(1);
    expectOneLine(noToken.stderr(), "set ADMIN_TOKEN");

    const badFlag = cli(["replay", "--id", "evt_1", "--bogus"], {});
    expect((await badFlag.exited).code).toBe(2);
    expectOneLine(badFlag.stderr(), "unknown option --bogus");

    const mixed = cli(["replay", "--id", "evt_1", "--status", "failed"], {});
    expect((await mixed.exited).code).toBe(2);
    expectOneLine(mixed.stderr(), "--id takes only --handler, --account and --url");
  }, 180_000);
});
