import { randomUUID } from "node:crypto";
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { redisKeys } from "../../src/redis/keys.js";
import { createRefreshScheduler, PENDING_REFRESH_TTL_MS, WHOLE_MENU, type RefreshScheduler } from "../../src/sync/refresh-scheduler.js";
import type { RefreshJobData } from "../../src/sync/refresh-runs.js";

let redis: Redis;
let queue: Queue<RefreshJobData>;
let scheduler: RefreshScheduler;
let prefix: string;
beforeEach(() => {
  prefix = `test-sched-${randomUUID().slice(0, 8)}`;
  redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: null });
  queue = new Queue<RefreshJobData>("sync", { connection: redis, prefix });
  scheduler = createRefreshScheduler({ redis, queue, prefix, debounceMs: 1000 });
});
afterEach(async () => {
  await queue.obliterate({ force: true });
  await queue.close();
  await redis.quit();
});

describe("refresh scheduler", () => {
  it("gives the pending ids an expiry, set again by every request (a hash no refresh reads does not stay forever)", async () => {
    const prefix = `test-sched-ttl-${randomUUID().slice(0, 8)}`;
    const ttl = createRefreshScheduler({ redis, queue, prefix, debounceMs: 1000, pendingTtlMs: 3_600_000 });
    const key = redisKeys(prefix).pendingRefresh("orders", "rest_1");
    await ttl.request("orders", "rest_1", "ord_1");
    const first = await redis.pttl(key);
    expect(first).toBeGreaterThan(0);
    expect(first).toBeLessThanOrEqual(3_600_000);
    // Shortened by hand, then another event for the restaurant: the expiry is the full TTL again.
    await redis.pexpire(key, 60_000);
    await ttl.request("orders", "rest_1", "ord_2");
    expect(await redis.pttl(key)).toBeGreaterThan(60_000);
    expect([...(await ttl.pending("orders", "rest_1")).keys()].sort()).toEqual(["ord_1", "ord_2"]);
    // The default is a week.
    await scheduler.request("bookings", "rest_1", "bkg_1");
    const pending = await redis.pttl(redisKeys(queue.opts.prefix).pendingRefresh("bookings", "rest_1"));
    expect(pending).toBeGreaterThan(PENDING_REFRESH_TTL_MS - 3_600_000);
    expect(PENDING_REFRESH_TTL_MS).toBe(7 * 24 * 3600_000);
  });

  it("forgets the ids a refresh read", async () => {
    await scheduler.request("orders", "rest_1", "ord_1");
    await scheduler.request("orders", "rest_1", "ord_2");
    const seen = await scheduler.pending("orders", "rest_1");
    expect([...seen.keys()].sort()).toEqual(["ord_1", "ord_2"]);
    await scheduler.forgetRead("orders", "rest_1", seen);
    expect((await scheduler.pending("orders", "rest_1")).size).toBe(0);
  });

  it("keeps an id noted again while a refresh was running, for the next refresh", async () => {
    await scheduler.request("orders", "rest_1", "ord_1");
    await scheduler.request("orders", "rest_1", "ord_2");
    const seen = await scheduler.pending("orders", "rest_1");
    // ord_1 changes again after the running sweep may already have read it.
    await scheduler.request("orders", "rest_1", "ord_1");
    await scheduler.forgetRead("orders", "rest_1", seen);
    expect([...(await scheduler.pending("orders", "rest_1")).keys()]).toEqual(["ord_1"]);
  });

  it("keeps a whole-menu refresh requested while one was running", async () => {
    await scheduler.request("menu-items", "rest_2");
    const seen = await scheduler.pending("menu-items", "rest_2");
    expect([...seen.keys()]).toEqual([WHOLE_MENU]);
    await scheduler.request("menu-items", "rest_2");
    await scheduler.forgetRead("menu-items", "rest_2", seen);
    expect([...(await scheduler.pending("menu-items", "rest_2")).keys()]).toEqual([WHOLE_MENU]);
  });

  it("schedules one job per kind for every restaurant, and keeps what the events said of each id", async () => {
    await scheduler.request("orders", "rest_1", "ord_1", { eventId: "evt_1", status: "CONFIRMED", createdAt: "2026-01-01T00:00:00.000Z" });
    // A stale delivery (an earlier status) never lowers the status noted; the event ids add up.
    await scheduler.request("orders", "rest_1", "ord_1", { eventId: "evt_0", status: "PENDING" });
    await scheduler.request("orders", "rest_2", "ord_2", { eventId: "evt_2" });
    await scheduler.request("bookings", "rest_2", "bkg_1", { eventId: "evt_3", date: "2026-12-24T00:00:00.000Z" });
    // One job per kind, whichever restaurant asked.
    expect((await queue.getDelayed()).map((j) => j.data.kind).sort()).toEqual(["bookings", "orders"]);
    const orders = await scheduler.pendingAll("orders");
    expect(orders.map((r) => r.restaurantId).sort()).toEqual(["rest_1", "rest_2"]);
    const note = orders.find((r) => r.restaurantId === "rest_1")?.notes.get("ord_1");
    expect(note).toMatchObject({ status: "CONFIRMED", createdAt: "2026-01-01T00:00:00.000Z", eventIds: ["evt_1", "evt_0"] });
    expect((await scheduler.pendingAll("bookings"))[0]?.notes.get("bkg_1")).toMatchObject({ date: "2026-12-24T00:00:00.000Z" });
  });

  it("drops a restaurant from the kind's index once its ids are read, unless a request came after the job read it", async () => {
    await scheduler.request("orders", "rest_1", "ord_1");
    const [taken] = await scheduler.pendingAll("orders");
    await scheduler.forgetRead("orders", "rest_1", taken!.ids);
    // A request after the job read the index (and read since): the restaurant stays.
    await scheduler.request("orders", "rest_1", "ord_2");
    await scheduler.forgetRead("orders", "rest_1", (await scheduler.pendingAll("orders"))[0]!.ids);
    await scheduler.forgetIfIdle("orders", "rest_1", taken!.score);
    expect((await scheduler.pendingAll("orders")).map((r) => r.restaurantId)).toEqual(["rest_1"]);
    // With the score it read last, and nothing pending: gone.
    const [again] = await scheduler.pendingAll("orders");
    await scheduler.forgetIfIdle("orders", "rest_1", again!.score);
    expect(await scheduler.pendingAll("orders")).toEqual([]);
  });
  it("keeps the pace a run set when it ended with nothing pending: the next event's run waits it out, not just the debounce", async () => {
    const scheduler = createRefreshScheduler({ redis, queue, prefix, debounceMs: 100 });
    await scheduler.pace("orders", 60_000);
    await scheduler.request("orders", "rest_1", "ord_1");
    await scheduler.request("bookings", "rest_1", "bkg_1");
    const delays = Object.fromEntries((await queue.getDelayed()).map((j) => [j.data.kind, j.delay]));
    expect(delays.orders).toBeGreaterThan(50_000);
    expect(delays.bookings).toBeLessThanOrEqual(100); // another kind's pace is its own
  });
  it("keeps the pace a run asked for when an event asks after it, before the run ends", async () => {
    const scheduler = createRefreshScheduler({ redis, queue, prefix, debounceMs: 0 });
    const worker = new Worker<RefreshJobData>(
      "sync",
      async () => {
        // The run's paced ask for its next run, then an event in the moment before the run ends.
        await scheduler.pace("orders", 60_000);
        await scheduler.runWithin("orders", 0);
        await scheduler.request("orders", "rest_1", "ord_2");
      },
      { connection: redis.duplicate(), prefix, autorun: false },
    );
    const ended = new Promise((resolve) => worker.once("completed", resolve));
    await queue.add("refresh", { kind: "orders" }, { deduplication: { id: "refresh-orders", keepLastIfActive: true } });
    void worker.run();
    await ended;
    await worker.close();
    // BullMQ added the last ask as the next run when the run ended: it waits out the pace.
    expect(await queue.getJobCounts("delayed", "waiting", "active")).toEqual({ delayed: 1, waiting: 0, active: 0 });
  });
});
