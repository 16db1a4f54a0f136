import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { sql } from "kysely";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { createPostgresMirror } from "../../src/mirror/mirror-store.js";
import type { MirrorStore } from "../../src/mirror/mirror-store.js";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { createSyncCheckpoints, type SyncCheckpoints } from "../../src/mirror/sync-checkpoints.js";
import { createApiClient, type ApiClient } from "../../src/upstream/client.js";
import { apiKeyId } from "../../src/base/api-key.js";
import { UpstreamPageRefusedError } from "../../src/upstream/errors.js";
import { createRateLimiter } from "../../src/upstream/rate-limiter.js";
import { createMirrorWriter } from "../../src/mirror/change-outbox.js";
import { runFullSlice } from "../../src/sync/full-tier.js";
import { refreshKind } from "../../src/sync/refresh-kind.js";
import { createRefreshQueue, type RefreshJobData } from "../../src/sync/refresh-queue.js";
import { runBackfill } from "../../src/sync/resumable-backfill.js";
import { runActivePass } from "../../src/sync/active-tier.js";
import { captureLogs } from "../helpers/log-capture.js";
import { importAll } from "../helpers/import-all.js";
import { openTestDatabase, preferredDriver, type TestDatabase } from "../helpers/postgres.js";

// The walks production runs (backfill, the full tier, refreshes) page through the sandbox over real HTTP into a mirror in the test database.
let sandbox: Sandbox;
let redis: Redis;
let queue: Queue<RefreshJobData>;
let prefix: string;
let api: ApiClient;
let mirror: MirrorStore;
let checkpoints: SyncCheckpoints;
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
  checkpoints = createSyncCheckpoints(database.db);
});
afterEach(async () => {
  await sandbox.close();
  await queue.obliterate({ force: true });
  await queue.close();
  await redis.quit();
  await database.close();
});

const orderPages = () => sandbox.requestLog.filter((r) => r.path === "/api/v1/orders").length;

describe("walks against an upstream whose list cannot be paged to its end", () => {
  it("backfill stops with a repeated-cursor error after the second page, its checkpoint at the last good page", async () => {
    sandbox.faults.add({ path: "/api/v1/orders", repeatCursor: true });
    const error = await runBackfill({ api, mirror, checkpoints, kinds: ["orders"] }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(UpstreamPageRefusedError);
    expect(error).toMatchObject({ code: "repeated_cursor", message: expect.stringMatching(/same cursor/) as unknown });
    expect(sandbox.requestLog).toHaveLength(2);
    // What the pages held before the guard tripped is in the mirror.
    expect((await mirror.all("orders")).length).toBe(sandbox.state.orders().length);
    // Saved after the first page only: a run once the upstream is fixed goes on from its cursor.
    const firstCursor = new URLSearchParams(sandbox.requestLog[1]!.query).get("cursor");
    expect(await checkpoints.get("backfill", "orders")).toMatchObject({ cursor: firstCursor, pages: 1, passCompletedAt: null });
  });

  it("backfill stops at a page over the byte cap the same way: refused once, its checkpoint at the page before", async () => {
    sandbox.silently(() => {
      for (let i = 0; i < 150; i++) sandbox.actions.createOrder();
    });
    const capped = createApiClient({ baseUrl: sandbox.url!, apiKey: sandbox.apiKey, retryBaseMs: 10, maxPageBytes: 512 * 1024 });
    sandbox.faults.add({ path: "/api/v1/orders", after: 1, padBodyBytes: 64 * 1024 * 1024 });
    const error = await runBackfill({ api: capped, mirror, checkpoints, kinds: ["orders"] }).catch((err: unknown) => err);
    expect(error).toMatchObject({ code: "page_too_large" });
    expect(orderPages()).toBe(2);
    const firstCursor = new URLSearchParams(sandbox.requestLog[1]!.query).get("cursor");
    expect(await checkpoints.get("backfill", "orders")).toMatchObject({
      cursor: firstCursor,
      pages: 1,
      records: 100,
      passCompletedAt: null,
    });
  });

  it("the full tier gives its pass up once, says so at error level, and reads that list no more until the next pass is due", async () => {
    sandbox.faults.add({ path: "/api/v1/orders", repeatCursor: true });
    // A mirror already holding orders: the pass is no first import.
    await mirror.upsert("orders", [{ ...sandbox.state.orders()[0]! }], await mirror.clock());
    const logs = captureLogs();
    const slice = () =>
      runFullSlice({
        api,
        mirror,
        checkpoints,
        changes: { writer: createMirrorWriter(mirror), source: "reconcile" },
        intervalMs: 3_600_000,
        maxPages: 30,
        logger: pino({ level: "info" }, logs.stream),
      });
    const first = await slice();
    expect(first.kinds.orders?.state).toBe("unreadable");
    expect(orderPages()).toBe(2);
    const saved = await checkpoints.get("full", "orders");
    // Ended, but no complete pass: the metric of the last complete pass does not move.
    expect(saved).toMatchObject({ cursor: null, lastCompleteAt: null });
    expect(saved?.passCompletedAt).not.toBeNull();
    const second = await slice();
    expect(second).toEqual({ pages: 0, kinds: {} });
    expect(orderPages()).toBe(2);
    const errors = logs.records().filter((r) => r.level === 50);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ kind: "orders", err: expect.stringMatching(/same cursor/) as unknown });
  });

  it("a restaurant refresh looking for a record that is not there stops the same way, its id missed, not its job failed", async () => {
    sandbox.faults.add({ path: "/api/v1/bookings", repeatCursor: true });
    const scheduler = createRefreshQueue({ redis, queue, prefix, debounceMs: 60_000 });
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
    // The walk's failure is a miss for the id it looked for (the job goes on; refresh-set-aside.test.ts).
    await expect(run).resolves.toMatchObject({ missing: ["bkg_not_upstream"] });
    // Each candidate read (the recent window, then the whole list) stopped at its second page,
    // which handed back the cursor it was sent.
    expect(sandbox.requestLog.map((r) => r.query.includes("cursor="))).toEqual([false, true, false, true]);
    // Not settled: the id stays pending for the next refresh.
    expect((await scheduler.pending("bookings")).map((p) => p.id)).toEqual(["bkg_not_upstream"]);
  });

  it("a page read after a 429's Retry-After is stored with a read time after the wait, not before the first try", async () => {
    const limited = createApiClient({
      baseUrl: sandbox.url!,
      apiKey: sandbox.apiKey,
      limiter: createRateLimiter({ redis, keyId: apiKeyId(sandbox.apiKey), prefix, max: 1000, windowMs: 1000, safetyMs: 0 }),
    });
    sandbox.faults.add({ path: "/api/v1/menu-items", status: 429, retryAfterSeconds: 1, times: 1 });
    const before = await mirror.clock();
    await importAll({ api: limited, mirror, db: database.db, kinds: ["menu-items"] });
    expect(sandbox.requestLog.map((r) => r.status)).toEqual([429, 200]);
    const { rows } = await sql<{ read_at: Date }>`select min(read_at) as read_at from menu_items`.execute(database.db);
    // The shared pause was 1 s: the read that answered was sent at least that long after the sweep began.
    expect(rows[0]!.read_at.getTime()).toBeGreaterThanOrEqual(before.getTime() + 1000);
  });

  it("pages to the end of a list that spans several pages (no fault)", async () => {
    for (let i = 0; i < 120; i++) sandbox.actions.createOrder();
    const totals = await importAll({ api, mirror, db: database.db, kinds: ["orders"] });
    expect(totals.orders).toBe(sandbox.state.orders().length);
    expect(sandbox.requestLog).toHaveLength(Math.ceil(sandbox.state.orders().length / 100));
  });
});

describe("every walk is bounded: a list whose cursors go round a cycle", () => {
  /** The sandbox without its rate limit: these walks read hundreds of pages. */
  async function unlimited() {
    await sandbox.close();
    sandbox = createSandbox({ rateLimit: { max: 1_000_000, windowMs: 60_000 } });
    api = createApiClient({ baseUrl: await sandbox.listen(), apiKey: sandbox.apiKey, retryBaseMs: 10 });
  }

  it("backfill fails a cycle of 300 cursors when the first comes back, a cycle longer than its page cap at the cap", async () => {
    await unlimited();
    sandbox.faults.add({ path: "/api/v1/orders", cursorCycle: 300 });
    const cycled = await runBackfill({ api, mirror, checkpoints, kinds: ["orders"] }).catch((err: unknown) => err);
    expect(cycled).toMatchObject({
      code: "repeated_cursor",
      message: expect.stringMatching(/same cursor again after 301 page/) as unknown,
    });
    expect(orderPages()).toBe(301);

    sandbox.requestLog.length = 0;
    sandbox.faults.clear();
    sandbox.faults.add({ path: "/api/v1/orders", cursorCycle: 1000 });
    const capped = await runBackfill({ api, mirror, checkpoints, kinds: ["orders"], restart: true, pageCap: 40 }).catch(
      (err: unknown) => err,
    );
    expect(capped).toMatchObject({ code: "page_cap", message: expect.stringMatching(/past 40 pages/) as unknown });
    expect(orderPages()).toBe(40);
    // Saved up to the page before: the cap counts the pass's pages, so a run after it stops at once.
    expect(await checkpoints.get("backfill", "orders")).toMatchObject({ pages: 39, passCompletedAt: null });
  }, 60_000);

  it("the full tier catches a cycle longer than its slices within a bound proportional to the cycle (a 10-page one at once)", async () => {
    await unlimited();
    // A mirror already holding orders: the pass is no first import.
    await mirror.upsert("orders", [{ ...sandbox.state.orders()[0]! }], await mirror.clock());
    /** Runs 20-page slices until the orders pass is given up, or 600 order pages went by uncaught. */
    const sliceUntilCaught = async (force: boolean) => {
      for (let first = true; orderPages() < 600; first = false) {
        const slice = await runFullSlice({
          api,
          mirror,
          checkpoints,
          changes: { writer: createMirrorWriter(mirror), source: "reconcile" },
          intervalMs: 3_600_000,
          maxPages: 20,
          force: force && first,
          logger: pino({ level: "silent" }),
        });
        if (slice.kinds.orders?.state === "unreadable") return true;
      }
      return false;
    };
    // 50 cursors, 20-page slices: each slice alone sees no cursor twice, the pass's guard does.
    sandbox.faults.add({ path: "/api/v1/orders", cursorCycle: 50 });
    expect(await sliceUntilCaught(false)).toBe(true);
    // Brent's detector: within the cycle's start (0) plus about twice its length, at most three times it.
    expect(orderPages()).toBeLessThanOrEqual(150);
    expect(await checkpoints.get("full", "orders")).toMatchObject({ cursor: null, lastCompleteAt: null, guard: null });

    // The control: a 10-page cycle inside one slice is caught when its first cursor comes back.
    sandbox.requestLog.length = 0;
    sandbox.faults.clear();
    sandbox.faults.add({ path: "/api/v1/orders", cursorCycle: 10 });
    expect(await sliceUntilCaught(true)).toBe(true);
    expect(orderPages()).toBe(11);
  }, 60_000);

  it("the active tier's walk of an endless open list fails at the page cap", async () => {
    await unlimited();
    sandbox.faults.add({ path: "/api/v1/orders", cursorCycle: 1000 });
    const walk = runActivePass({
      api,
      mirror,
      checkpoints,
      changes: { writer: createMirrorWriter(mirror), source: "reconcile" },
      pageCap: 25,
    });
    await expect(walk).rejects.toMatchObject({ code: "page_cap" });
    expect(orderPages()).toBe(25);
  }, 60_000);
});
