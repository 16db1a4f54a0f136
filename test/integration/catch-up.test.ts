import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { sql } from "kysely";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { createPostgresMirror, type MirrorStore } from "../../src/mirror/mirror-store.js";
import { createMirrorWriter } from "../../src/mirror/change-outbox.js";
import { createSyncCheckpoints, type SyncCheckpoints } from "../../src/mirror/sync-checkpoints.js";
import { redisKeys } from "../../src/redis/redis.js";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { createApiClient, type ApiClient } from "../../src/upstream/client.js";
import { runActivePass } from "../../src/sync/active-tier.js";
import type { SweepChanges } from "../../src/sync/first-import.js";
import { runFullSlice } from "../../src/sync/full-tier.js";
import { createGapWatch, gapThresholdMs } from "../../src/worker/worker-lifecycle.js";
import { openTestDatabase, preferredDriver, type TestDatabase } from "../helpers/postgres.js";

// After a gap no webhook arrives for what changed in it (the spec shows no redelivery): the
// catch-up pass reads it back. The sandbox over real HTTP, the mirror and marks in PostgreSQL.
let opened: Sandbox | undefined;
let api: ApiClient;
let mirror: MirrorStore;
let checkpoints: SyncCheckpoints;
let database: TestDatabase;
let changes: SweepChanges;
const logger = pino({ level: "silent" });
const DAY = 86_400_000;

beforeEach(async () => {
  database = await openTestDatabase(preferredDriver());
  mirror = createPostgresMirror(database.db);
  checkpoints = createSyncCheckpoints(database.db);
  changes = { writer: createMirrorWriter(mirror), source: "reconcile" };
});
afterEach(async () => {
  await opened?.close();
  opened = undefined;
  await database.close();
});

describe("the catch-up pass", () => {
  it("finds every change of a gap: new orders finished, recent orders refunded, a past booking cancelled, a menu edit", async () => {
    const sandbox = createSandbox({ restaurants: 8, history: { orders: 3000, days: 30, menuItems: 4 } });
    opened = sandbox;
    api = createApiClient({ baseUrl: await sandbox.listen(), apiKey: sandbox.apiKey, retryBaseMs: 10, readRetries: 0 });
    await runFullSlice({ api, mirror, checkpoints, changes, intervalMs: 3600_000, maxPages: 10_000, logger });
    const gapStart = await mirror.clock();

    // The gap: every process stopped, the upstream went on.
    const now = Date.now();
    const orders = sandbox.state.orders();
    const refunded = orders
      .filter((o) => o.status === "DELIVERED" && o.paidAt && now - Date.parse(o.createdAt) < DAY / 2)
      .slice(0, 3)
      .map((o) => o.id);
    const yesterday = new Date(now - DAY).toISOString().slice(0, 10);
    const booking = sandbox.state.bookings().find((b) => b.date.slice(0, 10) === yesterday && b.status !== "CANCELLED")!;
    const dish = sandbox.state.menuItems()[0]!;
    const created = sandbox.silently(() => {
      for (const id of refunded) sandbox.actions.refundOrder(id);
      sandbox.actions.cancelBooking(booking.id);
      sandbox.actions.updateMenuItem(dish.id, { price: dish.price + 1 });
      return ["DELIVERED", "DELIVERED", "CANCELLED", "READY"].map((last) => {
        const { id } = sandbox.actions.createOrder({ paid: true });
        for (const status of ["CONFIRMED", "PREPARING", "READY", "DELIVERED"]) {
          if (last === "CANCELLED") return sandbox.actions.updateOrderStatus(id, "CANCELLED").id;
          sandbox.actions.updateOrderStatus(id, status);
          if (status === last) break;
        }
        return id;
      });
    });
    expect(refunded).toHaveLength(3);

    // The active tier alone misses what was never open in the mirror (refunds of finished orders,
    // orders created and finished in the gap) and yesterday's booking.
    await runActivePass({ api, mirror, checkpoints, changes, logger });
    const wrong = async () => {
      const ids = [...refunded, ...created];
      const stale = [];
      for (const id of ids) {
        const upstream = sandbox.state.orders().find((o) => o.id === id)!;
        if ((await mirror.get("orders", id))?.status !== upstream.status) stale.push(id);
      }
      if ((await mirror.get("bookings", booking.id))?.status !== "CANCELLED") stale.push(booking.id);
      const price = sandbox.state.menuItems().find((m) => m.id === dish.id)!.price;
      if ((await mirror.get("menu-items", dish.id))?.price !== price) stale.push(dish.id);
      return stale;
    };
    const finishedInGap = created.slice(0, 3);
    expect(await wrong()).toEqual([...refunded, ...finishedInGap, booking.id]);

    const checked: Record<string, number> = {};
    const outcome = await runActivePass({
      api,
      mirror,
      checkpoints,
      changes,
      logger,
      catchUp: { gapStart },
      onPage: (kind, read) => (checked[kind] = (checked[kind] ?? 0) + read),
    });
    expect(await wrong()).toEqual([]);
    expect(outcome.byKind.orders).toMatchObject({ corrected: refunded.length + finishedInGap.length });
    expect(outcome.byKind.bookings).toMatchObject({ corrected: 1 });
    expect(Object.fromEntries(Object.entries(outcome.byKind).map(([k, v]) => [k, v.checked]))).toEqual(checked);
  });
});

describe("the catch-up's final lists", () => {
  it("reads DELIVERED and CANCELLED down to the gap's start only, REFUNDED whole (any paid order may be refunded)", async () => {
    // Two days of a busy company: a day of DELIVERED orders is about 13 pages.
    const sandbox = createSandbox({ restaurants: 8, history: { orders: 3000, days: 2, menuItems: 2 } });
    opened = sandbox;
    api = createApiClient({ baseUrl: await sandbox.listen(), apiKey: sandbox.apiKey, retryBaseMs: 10, readRetries: 0 });
    await runFullSlice({ api, mirror, checkpoints, changes, intervalMs: 3600_000, maxPages: 10_000, logger });
    const gapStart = await mirror.clock();
    const now = Date.now();
    // In the gap: refunds of orders of 20 hours ago, and an order created and delivered.
    const refunded = sandbox.state
      .orders()
      .filter((o) => o.status === "DELIVERED" && o.paidAt && Math.abs(now - Date.parse(o.createdAt) - (20 * DAY) / 24) < 3_600_000)
      .slice(0, 2)
      .map((o) => o.id);
    expect(refunded).toHaveLength(2);
    const delivered = sandbox.silently(() => {
      for (const id of refunded) sandbox.actions.refundOrder(id);
      const { id } = sandbox.actions.createOrder({ paid: true });
      for (const status of ["CONFIRMED", "PREPARING", "READY", "DELIVERED"]) sandbox.actions.updateOrderStatus(id, status);
      return id;
    });
    const from = sandbox.requestLog.length;
    await runActivePass({ api, mirror, checkpoints, changes, logger, catchUp: { gapStart } });
    for (const id of [...refunded, delivered])
      expect((await mirror.get("orders", id))?.status).toBe(sandbox.state.orders().find((o) => o.id === id)?.status);
    const pages = (status: string) =>
      sandbox.requestLog.slice(from).filter((r) => r.path === "/api/v1/orders" && new URLSearchParams(r.query).get("status") === status)
        .length;
    expect(pages("DELIVERED")).toBe(1);
    expect(pages("CANCELLED")).toBe(1);
    expect(pages("REFUNDED")).toBeGreaterThan(0);
  });
});

describe("the catch-up at depth", () => {
  // What a catch-up missed at 100,000 orders: a stop rule by createdAt (the refunds' horizon) or
  // by pages (100 of a final list) leaves a change below it to the full pass, 1,000 pages away at
  // that size (8+ min at 120 calls/min). Both rules fail the same way at any history that puts a
  // change below them: here a refund of an order of three weeks ago, and an order open in the
  // mirror with more than 100 pages of orders finished after it (at 100,000 orders over 30 days
  // that is an order open for three days, such as a pre-order).
  it("finds a refund of an order finished weeks ago, and a move of an open order below 100 pages of finished ones", async () => {
    const sandbox = createSandbox({
      restaurants: 4,
      history: { orders: 6000, days: 30, menuItems: 2 },
      rateLimit: { max: 1_000_000, windowMs: 60_000 },
    });
    opened = sandbox;
    api = createApiClient({ baseUrl: await sandbox.listen(), apiKey: sandbox.apiKey, retryBaseMs: 10, readRetries: 0 });
    const below = 10_100;
    const openForDays = sandbox.actions.createOrder({ paid: false }).id;
    for (let i = 0; i < below; i++) sandbox.actions.updateOrderStatus(sandbox.actions.createOrder({ paid: false }).id, "CANCELLED");
    // The mirror as an import leaves it (written at once: the import is not what is tested here).
    const all = sandbox.state.orders();
    for (let i = 0; i < all.length; i += 1000) await mirror.upsert("orders", all.slice(i, i + 1000), await mirror.clock());
    await mirror.upsert("bookings", sandbox.state.bookings(), await mirror.clock());
    await mirror.upsert("menu-items", sandbox.state.menuItems(), await mirror.clock());
    expect((await mirror.get("orders", openForDays))?.status).toBe("PENDING");
    const gapStart = await mirror.clock();
    const now = Date.now();
    const old = sandbox.state
      .orders()
      .find((o) => o.status === "DELIVERED" && o.paidAt && Math.abs(now - Date.parse(o.createdAt) - 21 * DAY) < DAY)!;
    sandbox.actions.refundOrder(old.id);
    sandbox.actions.updateOrderStatus(openForDays, "CANCELLED");

    const from = sandbox.requestLog.length;
    await runActivePass({ api, mirror, checkpoints, changes, logger, catchUp: { gapStart } });
    expect((await mirror.get("orders", old.id))?.status).toBe("REFUNDED");
    expect((await mirror.get("orders", openForDays))?.status).toBe("CANCELLED");
    // Read down to the order looked for, and not the whole list past it.
    const cancelledPages = sandbox.requestLog
      .slice(from)
      .filter((r) => r.path === "/api/v1/orders" && new URLSearchParams(r.query).get("status") === "CANCELLED").length;
    expect(cancelledPages).toBeLessThanOrEqual(Math.ceil((below + 1) / 100) + 1);
  }, 180_000);
});

describe("the gap watch", () => {
  let redis: Redis;
  beforeEach(() => {
    redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: null });
  });
  afterEach(async () => {
    await redis.quit();
  });

  it("sees no gap on the first start ever, one when the mark is old, and one when Redis lost its data; two workers ticking together act once", async () => {
    const prefix = `test-gap-${randomUUID().slice(0, 8)}`;
    const gaps: Date[] = [];
    let restored = 0;
    const watch = () =>
      createGapWatch({
        redis,
        prefix,
        checkpoints,
        intervalMs: 1000,
        logger,
        restore: () => {
          restored++;
          return Promise.resolve();
        },
        catchUp: (gapStart) => Promise.resolve(void gaps.push(gapStart)),
      });
    const [a, b] = [watch(), watch()];
    try {
      expect(await a.tick()).toEqual({ redisEmptied: false });
      expect(await b.tick()).toEqual({ redisEmptied: false });
      expect(gaps).toEqual([]);
      expect(restored).toBe(1); // the first tick ever finds no sentinel: it sets it up

      // Every worker away for five minutes.
      const lastSeen = new Date(Date.now() - 300_000);
      await sql`update sync_liveness set seen_at = ${lastSeen}`.execute(database.db);
      await Promise.all([a.tick(), b.tick()]);
      expect(gaps).toEqual([new Date(lastSeen.getTime() - gapThresholdMs(1000))]);
      expect(restored).toBe(1);

      // Redis emptied (FLUSHALL, an empty replica): the sentinel is gone while PostgreSQL knows the service.
      gaps.length = 0;
      await redis.del(redisKeys(prefix).workersAlive);
      // Both workers tick at once: one restores and catches up, the other leaves it to it.
      const ticks = await Promise.all([a.tick(), b.tick()]);
      expect(ticks.filter((t) => t.redisEmptied)).toEqual([{ redisEmptied: true, gapStart: expect.any(Date) as unknown }]);
      expect(gaps).toHaveLength(1);
      expect(restored).toBe(2);
      expect(await b.tick()).toEqual({ redisEmptied: false });
      expect(gaps).toHaveLength(1);
    } finally {
      await redis.del(redisKeys(prefix).workersAlive);
    }
  });

  it("stops only once the tick in flight has enqueued its catch-up, and a tick after the stop enqueues nothing", async () => {
    const prefix = `test-gap-${randomUUID().slice(0, 8)}`;
    const enqueued: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let caughtUp!: () => void;
    const inCatchUp = new Promise<void>((resolve) => (caughtUp = resolve));
    const watch = createGapWatch({
      redis,
      prefix,
      checkpoints,
      intervalMs: 1000,
      logger,
      restore: () => Promise.resolve(),
      catchUp: async () => {
        caughtUp();
        await held;
        enqueued.push("catch-up");
      },
    });
    try {
      await watch.tick(); // the first tick ever sets the sentinel up
      await sql`update sync_liveness set seen_at = ${new Date(Date.now() - 300_000)}`.execute(database.db);
      const ticking = watch.tick();
      await inCatchUp;
      const order: string[] = [];
      const stopping = Promise.resolve(watch.stop()).then(() => order.push("stopped"));
      void ticking.then(() => order.push("tick done"));
      release();
      await stopping;
      // The queues close once stop() resolves: the catch-up in hand was enqueued before.
      expect(order).toEqual(["tick done", "stopped"]);
      expect(enqueued).toEqual(["catch-up"]);
      await sql`update sync_liveness set seen_at = ${new Date(Date.now() - 300_000)}`.execute(database.db);
      expect(await watch.tick()).toEqual({ redisEmptied: false });
      expect(enqueued).toEqual(["catch-up"]);
    } finally {
      await redis.del(redisKeys(prefix).workersAlive);
    }
  });
});
