import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { createPostgresMirror, type MirrorStore } from "../../src/mirror/mirror-store.js";
import { signPayload } from "../../src/events/envelope.js";
import type { RejectedRecord } from "../../src/mirror/set-aside-records.js";
import { redisKeys } from "../../src/redis/redis.js";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { createApiClient, type ApiClient } from "../../src/upstream/client.js";
import { createRefusedFilters, refreshKind, type RefreshKindDeps } from "../../src/sync/refresh-kind.js";
import { createRefreshQueue, type RefreshQueue, type RefreshJobData } from "../../src/sync/refresh-queue.js";
import type { SyncedKind } from "../../src/mirror/kinds.js";
import { TEST_SECRET } from "../helpers/edge.js";
import { openTestDatabase, preferredDriver, type TestDatabase } from "../helpers/postgres.js";
import { startStack, type Stack } from "../helpers/stack.js";

// Issue 40, bug 1: a pending id the mirror cannot store or read, or a read the upstream refuses
// for good (a 4xx), is set aside with its reason and never holds up the rest of the refresh. Real
// Redis, the test database and the sandbox over HTTP.

let redis: Redis;
let queue: Queue<RefreshJobData>;
let prefix: string;
let database: TestDatabase;
let mirror: MirrorStore;
let reported: RejectedRecord[];
let sandbox: Sandbox;
let api: ApiClient;
let scheduler: RefreshQueue;
let now: number;
let warnings: { msg: string; [field: string]: unknown }[];

beforeEach(async () => {
  prefix = `test-set-aside-${randomUUID().slice(0, 8)}`;
  redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: null });
  queue = new Queue<RefreshJobData>("sync", { connection: redis, prefix });
  database = await openTestDatabase(preferredDriver());
  reported = [];
  mirror = createPostgresMirror(database.db, { onRejected: (r) => reported.push(...r) });
  sandbox = createSandbox({ restaurants: 2, seed: 11, rateLimit: { max: 1_000_000, windowMs: 60_000 } });
  api = createApiClient({ baseUrl: await sandbox.listen(), apiKey: sandbox.apiKey, retryBaseMs: 10 });
  now = Date.parse("2026-11-24T10:00:00Z");
  scheduler = createRefreshQueue({ redis, queue, prefix, debounceMs: 60_000, now: () => now });
  warnings = [];
}, 60_000);
afterEach(async () => {
  await sandbox.close();
  await queue.obliterate({ force: true });
  await queue.close();
  await redis.quit();
  await database.close();
});

/** A logger that keeps its warnings (as parsed lines). */
const warningLogger = () => pino({ level: "warn" }, { write: (line: string) => void warnings.push(JSON.parse(line) as { msg: string }) });

function deps(kind: SyncedKind, extra: Partial<RefreshKindDeps> = {}): RefreshKindDeps {
  return { api, mirror, scheduler, logger: warningLogger(), kind, maxPages: 10, giveUpMs: 600_000, now: () => now, ...extra };
}

describe("a pending id the mirror cannot hold", () => {
  it("is set aside with its reason and leaves the pending set; the job's other ids still refresh", async () => {
    const bad = "ord_\u0000nul";
    const real = sandbox.actions.createOrder({ restaurantId: "rest_1" });
    // A thin event (id and restaurant only): where to look comes from the mirror's copy of the id.
    await scheduler.request("orders", "rest_1", bad, { eventId: "evt_bad" });
    await scheduler.request("orders", "rest_1", real.id, { eventId: "evt_real", status: "PENDING", createdAt: real.createdAt });

    const outcome = await refreshKind(deps("orders"));
    expect(outcome.found).toBe(1);
    expect(await mirror.get("orders", real.id)).toMatchObject({ id: real.id });
    expect(await scheduler.pending("orders")).toEqual([]);
    // Where operators see what the mirror refused: the escaped id, its reason and the field.
    const rejections = await mirror.rejections("orders");
    expect(rejections.map((r) => ({ id: r.id, reason: r.reason, restaurantId: r.restaurantId }))).toEqual([
      { id: "ord_\\u0000nul", reason: "nul_character", restaurantId: "rest_1" },
    ]);
    expect(rejections[0]?.detail).toContain("field id");
    expect(reported.map((r) => [r.id, r.reason])).toEqual([[bad, "nul_character"]]);
    // A later job starts clean: nothing of the bad id is left to fail it.
    const other = sandbox.actions.createOrder({ restaurantId: "rest_2" });
    await scheduler.request("orders", "rest_2", other.id, { eventId: "evt_other", status: "PENDING", createdAt: other.createdAt });
    expect((await refreshKind(deps("orders"))).found).toBe(1);
    expect(await mirror.get("orders", other.id)).toBeDefined();
  }, 60_000);

  it("a restaurant id the database cannot hold sets the id aside the same way", async () => {
    const real = sandbox.actions.createOrder({ restaurantId: "rest_1" });
    await scheduler.request("orders", "rest_\u0000", "ord_elsewhere", { eventId: "evt_bad", status: "PENDING", createdAt: real.createdAt });
    await scheduler.request("orders", "rest_1", real.id, { eventId: "evt_real", status: "PENDING", createdAt: real.createdAt });
    expect((await refreshKind(deps("orders"))).found).toBe(1);
    expect(await scheduler.pending("orders")).toEqual([]);
    expect((await mirror.rejections("orders")).map((r) => [r.id, r.reason])).toEqual([["ord_elsewhere", "nul_character"]]);
  }, 60_000);
});

describe("one signed order.created whose data.id holds a NUL, through the whole service", () => {
  let stack: Stack | undefined;
  afterEach(async () => {
    await stack?.stop();
    stack = undefined;
  });

  it("does not stop the company's orders refreshes: the next orders are mirrored, the bad id is set aside and not pending", async () => {
    stack = await startStack({ env: { SYNC_DEBOUNCE_MS: "0" } });
    const body = JSON.stringify({
      id: "evt_nul_order",
      type: "order.created",
      createdAt: new Date().toISOString(),
      data: { id: "ord_\u0000nul", restaurantId: "rest_1" },
    });
    const res = await fetch(`${stack.svc.url}/webhooks`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-signature": signPayload(body, TEST_SECRET) },
      body,
    });
    expect(res.status).toBe(200);
    await stack.drained();
    const order = stack.sandbox.actions.createOrder({ restaurantId: "rest_1", paid: true });
    stack.sandbox.actions.refundOrder(order.id);
    await stack.drained();
    const { mirror } = stack.svc.service;
    expect(await mirror.get("orders", order.id)).toMatchObject({ id: order.id, status: "REFUNDED" });
    expect(await stack.svc.redis.hlen(redisKeys(stack.svc.prefix).syncOf().pendingRefresh("orders"))).toBe(0);
    expect((await mirror.rejections("orders")).map((r) => [r.id, r.reason])).toEqual([["ord_\\u0000nul", "nul_character"]]);
  }, 120_000);
});

describe("a read the upstream refuses (a permanent 4xx)", () => {
  const diner = { name: "Ada", email: "ada@example.com" };

  it("falls back to the next candidate read, is named once in a warning, and is not asked again by later jobs", async () => {
    const refused = createRefusedFilters();
    const first = sandbox.actions.createBooking({ restaurantId: "rest_1", date: "2026-12-01", time: "19:00", partySize: 2, diner });
    // The upper bound's name is our guess: this upstream refuses the windowed read once.
    sandbox.faults.add({ method: "GET", path: "/api/v1/bookings", status: 400, times: 1 });
    await scheduler.request("bookings", "rest_1", first.id, { eventId: "evt_1", date: first.date });
    sandbox.requestLog.length = 0;
    const outcome = await refreshKind(deps("bookings", { refused }));
    expect(outcome.found).toBe(1);
    expect(await mirror.get("bookings", first.id)).toBeDefined();
    expect(sandbox.requestLog.map((r) => [r.status, r.query.includes("to=")])).toEqual([
      [400, true],
      [200, false],
    ]);
    expect(warnings.map((w) => w.msg)).toEqual([expect.stringMatching(/refuses bookings reads filtered by from, to/)]);

    // The next job reads without the refused parameter at once, and warns no more.
    const second = sandbox.actions.createBooking({ restaurantId: "rest_2", date: "2026-12-03", time: "19:00", partySize: 2, diner });
    await scheduler.request("bookings", "rest_2", second.id, { eventId: "evt_2", date: second.date });
    sandbox.requestLog.length = 0;
    expect((await refreshKind(deps("bookings", { refused }))).found).toBe(1);
    expect(sandbox.requestLog.map((r) => [r.status, r.query.includes("to=")])).toEqual([[200, false]]);
    expect(warnings).toHaveLength(1);
  }, 60_000);

  it("a list refused whatever the filter leaves its ids to the give-up rule: kept with backoff, then reported", async () => {
    const booking = sandbox.actions.createBooking({ restaurantId: "rest_1", date: "2026-12-01", time: "19:00", partySize: 2, diner });
    const real = sandbox.actions.createOrder({ restaurantId: "rest_1" });
    sandbox.faults.add({ method: "GET", path: "/api/v1/bookings", status: 422 });
    await scheduler.request("bookings", "rest_1", booking.id, { eventId: "evt_b", date: booking.date });
    await scheduler.request("orders", "rest_1", real.id, { eventId: "evt_o", status: "PENDING", createdAt: real.createdAt });
    const refused = createRefusedFilters();

    const first = await refreshKind(deps("bookings", { refused }));
    expect(first.missing).toEqual([booking.id]);
    // Another kind's refresh is not held up.
    expect((await refreshKind(deps("orders", { refused }))).found).toBe(1);

    now += 600_000;
    const last = await refreshKind(deps("bookings", { refused }));
    expect(last.unlisted).toEqual([booking.id]);
    expect(await scheduler.pending("bookings")).toEqual([]);
    expect((await mirror.unlisted("bookings")).map((r) => r.id)).toEqual([booking.id]);
  }, 60_000);
});

describe("a refresh read whose list cannot be walked (a cursor cycle, a repeated cursor)", () => {
  it("counts as a miss for the ids it was for, warns once, and leaves them to the give-up rule; other ids still refresh", async () => {
    const order = sandbox.actions.createOrder({ restaurantId: "rest_1" });
    const booking = sandbox.actions.createBooking({
      restaurantId: "rest_1",
      date: "2026-12-01",
      time: "19:00",
      partySize: 2,
      diner: { name: "Ada", email: "ada@example.com" },
    });
    // Every orders read goes round a cycle of 3 empty pages: no read of the list can end.
    sandbox.faults.add({ method: "GET", path: "/api/v1/orders", cursorCycle: 3 });
    await scheduler.request("orders", "rest_1", order.id, { eventId: "evt_o", status: "PENDING", createdAt: order.createdAt });
    await scheduler.request("bookings", "rest_1", booking.id, { eventId: "evt_b", date: booking.date });

    const first = await refreshKind(deps("orders"));
    expect(first.missing).toEqual([order.id]);
    expect(warnings.map((w) => w.msg)).toEqual([expect.stringMatching(/cannot be walked/)]);
    const [kept] = await scheduler.pending("orders");
    expect(kept?.note).toMatchObject({ misses: 1 });
    // Another kind's refresh is not held up.
    expect((await refreshKind(deps("bookings"))).found).toBe(1);

    now += 600_000;
    const last = await refreshKind(deps("orders"));
    expect(last.unlisted).toEqual([order.id]);
    expect(await scheduler.pending("orders")).toEqual([]);
    expect((await mirror.unlisted("orders")).map((r) => r.id)).toEqual([order.id]);
  }, 60_000);

  it("a whole menu whose list cycles does not stop the other restaurants' menus", async () => {
    // The first restaurant's menu read goes round a cycle of 3 cursors (4 pages show it); the
    // second's is answered as usual.
    sandbox.faults.add({ method: "GET", path: "/api/v1/menu-items", cursorCycle: 3, times: 4 });
    await scheduler.request("menu-items", "rest_1");
    await scheduler.request("menu-items", "rest_2");
    const outcome = await refreshKind(deps("menu-items"));
    expect(outcome.found).toBe(1);
    expect((await mirror.list("menu-items", { restaurantId: "rest_2", limit: 1 })).data).toHaveLength(1);
    expect(await scheduler.pending("menu-items")).toEqual([]);
    expect(warnings.map((w) => w.msg)).toEqual([expect.stringMatching(/cannot be walked/)]);
  }, 60_000);
});
