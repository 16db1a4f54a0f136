import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { sql } from "kysely";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { createPostgresMirror } from "../../src/mirror/postgres-store.js";
import type { MirrorStore } from "../../src/mirror/store.js";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { apiKeyId, createApiClient, createRateLimiter, UpstreamResponseError, type ApiClient } from "../../src/upstream/index.js";
import { refreshKind } from "../../src/worker/sync/refresh-kind.js";
import { createRefreshScheduler, type RefreshJobData } from "../../src/worker/sync/refresh-scheduler.js";
import { sweepAll } from "../../src/worker/sync/sweep-all.js";
import { openTestDatabase, preferredDriver, type TestDatabase } from "../helpers/postgres.js";

// Both sweeps page through the sandbox over real HTTP into a mirror in the test database.
let sandbox: Sandbox;
let redis: Redis;
let queue: Queue<RefreshJobData>;
let prefix: string;
let api: ApiClient;
let mirror: MirrorStore;
let database: TestDatabase;
beforeEach(async () => {
  sandbox = createSandbox();
  const url = await sandbox.listen();
  api = createApiClient({ baseUrl: url, apiKey: sandbox.apiKey, retryBaseMs: 10 });
  prefix = `test-paging-${randomUUID().slice(0, 8)}`;
  redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: null });
  queue = new Queue<RefreshJobData>("sync", { connection: redis, prefix });
  database = await openTestDatabase(preferredDriver());
  mirror = createPostgresMirror(database.db);
});
afterEach(async () => {
  await sandbox.close();
  await queue.obliterate({ force: true });
  await queue.close();
  await redis.quit();
  await database.close();
});

describe("sweeps against an upstream that hands back the same cursor", () => {
  it("backfill stops with a repeated-cursor error after the second page instead of paging forever", async () => {
    sandbox.faults.add({ path: "/api/v1/orders", repeatCursor: true });
    const error = await sweepAll({ api, mirror, kinds: ["orders"] }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(UpstreamResponseError);
    expect(error).toMatchObject({ code: "repeated_cursor", message: expect.stringMatching(/same cursor/) as unknown });
    expect(sandbox.requestLog).toHaveLength(2);
    // What the pages held before the guard tripped is in the mirror.
    expect((await mirror.all("orders")).length).toBe(sandbox.state.orders().length);
  });

  it("a restaurant refresh looking for a record that is not there stops the same way", async () => {
    sandbox.faults.add({ path: "/api/v1/bookings", repeatCursor: true });
    const scheduler = createRefreshScheduler({ redis, queue, prefix, debounceMs: 60_000 });
    await scheduler.request("bookings", "rest_1", "bkg_not_upstream");
    const run = refreshKind({
      api,
      mirror,
      scheduler,
      logger: pino({ level: "silent" }),
      kind: "bookings",
      maxPages: 10,
      giveUpMs: 600_000,
    });
    await expect(run).rejects.toMatchObject({ code: "repeated_cursor" });
    expect(sandbox.requestLog).toHaveLength(2);
    // Not settled: the id stays pending for the next refresh.
    expect([...(await scheduler.pending("bookings", "rest_1")).keys()]).toEqual(["bkg_not_upstream"]);
  });

  it("a page read after a 429's Retry-After is stored with a read time after the wait, not before the first try", async () => {
    const limited = createApiClient({
      baseUrl: sandbox.url!,
      apiKey: sandbox.apiKey,
      limiter: createRateLimiter({ redis, keyId: apiKeyId(sandbox.apiKey), prefix, max: 1000, windowMs: 1000, safetyMs: 0 }),
    });
    sandbox.faults.add({ path: "/api/v1/menu-items", status: 429, retryAfterSeconds: 1, times: 1 });
    const before = await mirror.clock();
    await sweepAll({ api: limited, mirror, kinds: ["menu-items"] });
    expect(sandbox.requestLog.map((r) => r.status)).toEqual([429, 200]);
    const { rows } = await sql<{ read_at: Date }>`select min(read_at) as read_at from menu_items`.execute(database.db);
    // The shared pause was 1 s: the read that answered was sent at least that long after the sweep began.
    expect(rows[0]!.read_at.getTime()).toBeGreaterThanOrEqual(before.getTime() + 1000);
  });

  it("pages to the end of a list that spans several pages (no fault)", async () => {
    for (let i = 0; i < 120; i++) sandbox.actions.createOrder();
    const totals = await sweepAll({ api, mirror, kinds: ["orders"] });
    expect(totals.orders).toBe(sandbox.state.orders().length);
    expect(sandbox.requestLog).toHaveLength(Math.ceil(sandbox.state.orders().length / 100));
  });
});
