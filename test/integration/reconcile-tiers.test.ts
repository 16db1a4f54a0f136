import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { createPostgresMirror, type MirrorStore } from "../../src/mirror/mirror-store.js";
import { createMirrorWriter } from "../../src/mirror/change-outbox.js";
import type { ChangeEvent } from "../../src/events/catalog.js";
import { createMetrics } from "../../src/metrics/metrics.js";
import { createSyncCheckpoints, type SyncCheckpoints } from "../../src/mirror/sync-checkpoints.js";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { createApiClient, type ApiClient } from "../../src/upstream/client.js";
import { runActivePass } from "../../src/sync/active-tier.js";
import type { SweepChanges } from "../../src/sync/first-import.js";
import { runFullSlice } from "../../src/sync/full-tier.js";
import { collectFullTier } from "../../src/worker/sync-worker.js";
import { scheduleReconcile } from "../../src/worker/sync-worker.js";
import { createRefreshQueue, type RefreshQueue, type RefreshJobData } from "../../src/sync/refresh-queue.js";
import { openTestDatabase, testDrivers, type TestDatabase } from "../helpers/postgres.js";

// The tiers page through the sandbox over real HTTP into a mirror in the test database, with
// their checkpoints in the same database: embedded, and the run's server when there is one.
let sandbox: Sandbox;
let redis: Redis;
let queue: Queue<RefreshJobData>;
let scheduler: RefreshQueue;
let api: ApiClient;
let mirror: MirrorStore;
let checkpoints: SyncCheckpoints;
let database: TestDatabase;
let recorded: ChangeEvent[];
let changes: SweepChanges;
const logger = pino({ level: "silent" });

async function open(options: Parameters<typeof createSandbox>[0] = {}) {
  sandbox = createSandbox(options);
  api = createApiClient({ baseUrl: await sandbox.listen(), apiKey: sandbox.apiKey, retryBaseMs: 10, readRetries: 0 });
}

const full = (extra: Partial<Parameters<typeof runFullSlice>[0]> = {}) =>
  runFullSlice({ api, mirror, checkpoints, changes, intervalMs: 3600_000, maxPages: 1000, logger, ...extra });
const active = () => runActivePass({ api, mirror, checkpoints, changes, logger });
const sourcesOf = (events: ChangeEvent[]) =>
  events.reduce<Record<string, number>>((n, e) => ({ ...n, [e.data.source]: (n[e.data.source] ?? 0) + 1 }), {});
const orderRequests = () => sandbox.requestLog.filter((r) => r.path === "/api/v1/orders");
const cursorOf = (query: string) => new URLSearchParams(query).get("cursor");

/** `n` orders of history that went all the way (DELIVERED), without a webhook. */
function finishedHistory(n: number) {
  sandbox.silently(() => {
    for (let i = 0; i < n; i++) {
      const { id } = sandbox.actions.createOrder();
      for (const status of ["CONFIRMED", "PREPARING", "READY", "DELIVERED"]) sandbox.actions.updateOrderStatus(id, status);
    }
  });
}

describe.each(testDrivers())("on the %s database", (driver) => {
  beforeEach(async () => {
    const prefix = `test-tiers-${randomUUID().slice(0, 8)}`;
    redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: null });
    queue = new Queue<RefreshJobData>("sync", { connection: redis, prefix });
    scheduler = createRefreshQueue({ redis, queue, prefix, debounceMs: 60_000 });
    database = await openTestDatabase(driver);
    mirror = createPostgresMirror(database.db);
    checkpoints = createSyncCheckpoints(database.db);
    recorded = [];
    const writer = createMirrorWriter(mirror, { onRecorded: (c) => recorded.push(...c) });
    changes = { writer, source: "reconcile", pending: (kind) => scheduler.pending(kind) };
    await open();
  });
  afterEach(async () => {
    await sandbox.close();
    await queue.obliterate({ force: true });
    await queue.close();
    await redis.quit();
    await database.close();
  });

  describe("first import", () => {
    it("a full pass into an empty mirror records its changes as backfill, not missed webhooks", async () => {
      const outcome = await full();
      expect(Object.values(outcome.kinds).map((k) => k.state)).toEqual(["complete", "complete", "complete"]);
      expect(sourcesOf(recorded)).toEqual({ backfill: 36 + 15 + 18 });
    });

    it("an active pass into an empty mirror (a first start, before any full pass) writes backfill from every list it reads", async () => {
      // Orders sit in several open lists and bookings in several windows: the first list's page
      // must not turn the next lists' records into missed webhooks.
      await active();
      expect(new Set(recorded.map((e) => e.data.kind))).toEqual(new Set(["order", "booking", "menu_item"]));
      expect(sourcesOf(recorded)).toEqual({ backfill: recorded.length });
    });

    it("the first full pass, begun after an active pass wrote part of every kind (a first start), is their import all the same", async () => {
      // The fresh stack's order: the active tier's first pass lands before the full tier starts.
      finishedHistory(250);
      await active();
      const fromActive = recorded.length;
      await full();
      expect(recorded.length).toBeGreaterThan(fromActive);
      expect(sourcesOf(recorded)).toEqual({ backfill: recorded.length });
    });

    it("the active tier running while the first full pass is unfinished still writes backfill", async () => {
      finishedHistory(250);
      await full({ maxPages: 1 }); // one page of orders: the pass is running
      await active();
      expect(Object.keys(sourcesOf(recorded))).toEqual(["backfill"]);
    });
  });

  describe("active tier", () => {
    it("catches a missed change to an open order, and a missed READY → DELIVERED, as reconcile", async () => {
      await full();
      recorded = [];
      const orders = sandbox.state.orders();
      const pending = orders.find((o) => o.status === "PENDING")!;
      const ready = orders.find((o) => o.status === "READY")!;
      const announced = orders.find((o) => o.status === "PREPARING")!;
      sandbox.silently(() => {
        sandbox.actions.updateOrderStatus(pending.id, "CONFIRMED");
        sandbox.actions.updateOrderStatus(ready.id, "DELIVERED");
        sandbox.actions.updateOrderStatus(announced.id, "READY");
      });
      // An event already asked for this one: its change is no missed webhook.
      await scheduler.request("orders", announced.restaurantId, announced.id);

      const outcome = await active();
      const byId = new Map(recorded.map((e) => [e.data.after.id, e.data]));
      expect(byId.get(pending.id)).toMatchObject({ source: "reconcile", after: { status: "CONFIRMED" } });
      expect(byId.get(ready.id)).toMatchObject({ source: "reconcile", after: { status: "DELIVERED" } });
      expect(byId.get(announced.id)).toMatchObject({ source: "webhook", after: { status: "READY" } });
      expect(recorded).toHaveLength(3);
      expect(outcome).toMatchObject({ leftOpen: 1, recovered: 1 });
      expect((await mirror.get("orders", ready.id))?.status).toBe("DELIVERED");
    });

    it("costs the same number of calls with 5,000 finished orders of history as with 100", async () => {
      const callsWith = async (history: number) => {
        await sandbox.close();
        await database.truncate();
        await open();
        finishedHistory(history);
        await full();
        sandbox.requestLog.length = 0;
        const outcome = await active();
        expect(outcome.calls).toBe(sandbox.requestLog.length);
        return outcome.calls;
      };
      const small = await callsWith(100);
      const large = await callsWith(5000);
      // Four open-status lists, bookings from today, menus: one page each here, whatever the history.
      expect(small).toBe(6);
      expect(large).toBe(small);
    });
  });

  describe("full tier", () => {
    it("walks in bounded slices, resumes each from its checkpoint, reads no page twice and completes", async () => {
      finishedHistory(414); // 450 orders: 5 pages
      const slices = [];
      for (let i = 0; i < 3; i++) slices.push(await full({ maxPages: 2 }));
      // The third slice ends the orders' pass with its first page and reads bookings with its second.
      expect(slices.map((s) => s.pages)).toEqual([2, 2, 2]);
      expect(slices.map((s) => s.kinds.orders?.state)).toEqual(["paused", "paused", "complete"]);
      const cursors = orderRequests().map((r) => cursorOf(r.query));
      expect(cursors).toHaveLength(5);
      expect(new Set(cursors).size).toBe(5);
      expect(await checkpoints.get("full", "orders")).toMatchObject({
        records: 450,
        pages: 5,
        cursor: null,
        passCompletedAt: expect.any(Date) as unknown,
      });
      expect((await mirror.all("orders")).length).toBe(450);
    });

    it("a slice that fails after k pages leaves the checkpoint at page k; the next one goes on from there", async () => {
      finishedHistory(414);
      sandbox.faults.add({ path: "/api/v1/orders", status: 500, after: 3 });
      await expect(full()).rejects.toThrow();
      expect(await checkpoints.get("full", "orders")).toMatchObject({ pages: 3, passCompletedAt: null });
      sandbox.faults.clear();
      const outcome = await full();
      expect(outcome.kinds.orders?.state).toBe("complete");
      const answered = orderRequests()
        .filter((r) => r.status === 200)
        .map((r) => cursorOf(r.query));
      expect(answered).toHaveLength(5);
      expect(new Set(answered).size).toBe(5);
      expect(await checkpoints.get("full", "orders")).toMatchObject({ records: 450, pages: 5 });
    });

    it("a cursor the upstream refuses (400) starts the kind's pass again from the top", async () => {
      finishedHistory(214);
      await full({ maxPages: 1 });
      const running = (await checkpoints.get("full", "orders"))!;
      expect(await checkpoints.advance(running, { cursor: "not-a-cursor", records: running.records, pages: running.pages })).toBe(true);
      const outcome = await full();
      expect(outcome.kinds.orders?.state).toBe("complete");
      expect(orderRequests().map((r) => r.status)).toEqual([200, 400, 200, 200, 200]);
      expect(await checkpoints.get("full", "orders")).toMatchObject({ records: 250, pages: 3 });
    });

    it("starts the next pass only once the interval since the last one started has passed, or when forced", async () => {
      await full();
      sandbox.requestLog.length = 0;
      expect((await full()).pages).toBe(0);
      expect(sandbox.requestLog).toHaveLength(0);
      const order = sandbox.state.orders().find((o) => o.status === "PENDING")!;
      sandbox.silently(() => sandbox.actions.updateOrderStatus(order.id, "CONFIRMED"));
      recorded = [];
      expect((await full({ intervalMs: 0 })).pages).toBe(3);
      // The mirror held the kind: a change the second pass finds is a missed webhook.
      expect(recorded.map((e) => [e.data.after.id, e.data.source])).toEqual([[order.id, "reconcile"]]);
      expect((await full({ force: true })).pages).toBe(3);
    });

    it("counts a complete backfill of the whole list as the last full pass; one with --since does not", async () => {
      const backfilled = async (kind: string, since: string | null) => {
        const started = await checkpoints.start("backfill", kind, { firstImport: false, since });
        await checkpoints.complete(started, { cursor: null, records: 1, pages: 1 });
      };
      for (const kind of ["orders", "bookings", "menu-items"]) await backfilled(kind, null);
      // Just backfilled: no pass is due, nothing is read.
      expect((await full()).pages).toBe(0);
      expect(sandbox.requestLog).toHaveLength(0);
      // A backfill of a window read only part of the list: the kind's full pass is due.
      await backfilled("orders", "2026-01-01");
      const afterWindow = await full();
      expect(Object.keys(afterWindow.kinds)).toEqual(["orders"]);
      expect(afterWindow.pages).toBeGreaterThan(0);
    });

    it("a forced pass starts every kind's pass, even when its first slice reaches only one kind", async () => {
      for (const kind of ["orders", "bookings", "menu-items"]) {
        const started = await checkpoints.start("backfill", kind, { firstImport: false });
        await checkpoints.complete(started, { cursor: null, records: 1, pages: 1 });
      }
      expect((await full({ force: true, maxPages: 1 })).pages).toBe(1);
      expect((await checkpoints.list("full")).map((c) => c.kind).sort()).toEqual(["bookings", "menu-items", "orders"]);
      // The slices after it are not forced, and still complete every kind's pass.
      await full();
      expect((await checkpoints.list("full")).every((c) => c.passCompletedAt !== null)).toBe(true);
    });

    it("shows each kind's progress and the time of the last complete pass as metrics", async () => {
      finishedHistory(214);
      const metrics = createMetrics();
      const startedAt = Date.now();
      collectFullTier(metrics, checkpoints, startedAt);
      await full({ maxPages: 2 });
      let text = (await metrics.render()).body;
      expect(text).toContain('svc_reconcile_full_pass_records{kind="orders"} 200');
      expect(text).toContain('svc_reconcile_full_pass_pages{kind="orders"} 2');
      expect(text).not.toMatch(/svc_reconcile_last_complete_pass_timestamp_seconds\{tier="full"\}/);
      await full();
      text = (await metrics.render()).body;
      expect(text).toContain('svc_reconcile_full_pass_records{kind="orders"} 250');
      const complete = /svc_reconcile_last_complete_pass_timestamp_seconds\{tier="full"\} (\S+)/.exec(text)?.[1];
      expect(Number(complete)).toBeGreaterThan(0);
      const success = /^svc_reconcile_last_success_timestamp_seconds (\S+)/m.exec(text)?.[1];
      expect(Number(success)).toBe(Math.max(startedAt / 1000, Number(complete)));
    });
  });
});

describe("schedules", () => {
  it("RECONCILE_INTERVAL_SECONDS=0 turns every tier off; otherwise the full tick and the active tier are scheduled", async () => {
    const connection = new Redis(inject("redisUrl"), { maxRetriesPerRequest: null });
    const sync = new Queue("sync", { connection, prefix: `test-sched-${randomUUID().slice(0, 8)}` });
    try {
      const worker = { reconcileIntervalMs: 3600_000, reconcileActiveIntervalMs: 120_000 } as Parameters<typeof scheduleReconcile>[1];
      // The single hourly sweep of before the tiers, left by an older version: removed.
      await sync.upsertJobScheduler("reconcile", { every: 3600_000 }, { name: "reconcile", data: {} });
      await scheduleReconcile(sync, worker, true);
      const every = async () => Object.fromEntries((await sync.getJobSchedulers()).map((s) => [s.key, s.every]));
      expect(await every()).toEqual({ "reconcile-full": 60_000, "reconcile-active": 120_000 });
      await scheduleReconcile(sync, { ...worker, reconcileActiveIntervalMs: 0 }, true);
      expect(await every()).toEqual({ "reconcile-full": 60_000 });
      await scheduleReconcile(sync, { ...worker, reconcileIntervalMs: 0 }, true);
      expect(await every()).toEqual({});
    } finally {
      await sync.obliterate({ force: true });
      await sync.close();
      await connection.quit();
    }
  });
});
