import { randomUUID } from "node:crypto";
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { redisKeys } from "../../src/redis/redis.js";
import {
  createRefreshQueue,
  PENDING_REFRESH_TTL_MS,
  WHOLE_MENU,
  type RefreshQueue,
  type RefreshJobData,
} from "../../src/sync/refresh-queue.js";

let redis: Redis;
let queue: Queue<RefreshJobData>;
let scheduler: RefreshQueue;
let prefix: string;
beforeEach(() => {
  prefix = `test-sched-${randomUUID().slice(0, 8)}`;
  redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: null });
  queue = new Queue<RefreshJobData>("sync", { connection: redis, prefix });
  scheduler = createRefreshQueue({ redis, queue, prefix, debounceMs: 1000 });
});
afterEach(async () => {
  await queue.obliterate({ force: true });
  await queue.close();
  await redis.quit();
});

describe("refresh scheduler", () => {
  it("gives the pending ids a week's expiry, set again by every request (a hash no refresh reads does not stay forever)", async () => {
    const key = redisKeys(prefix).syncOf().pendingRefresh("orders");
    await scheduler.request("orders", "rest_1", "ord_1");
    const first = await redis.pttl(key);
    expect(first).toBeGreaterThan(PENDING_REFRESH_TTL_MS - 3_600_000);
    expect(first).toBeLessThanOrEqual(PENDING_REFRESH_TTL_MS);
    expect(PENDING_REFRESH_TTL_MS).toBe(7 * 24 * 3600_000);
    // Shortened by hand, then another event: the expiry is the full TTL again.
    await redis.pexpire(key, 60_000);
    await scheduler.request("orders", "rest_2", "ord_2");
    expect(await redis.pttl(key)).toBeGreaterThan(PENDING_REFRESH_TTL_MS - 3_600_000);
    expect((await scheduler.pending("orders")).map((p) => [p.restaurantId, p.id]).sort()).toEqual([
      ["rest_1", "ord_1"],
      ["rest_2", "ord_2"],
    ]);
  });

  it("forgets the ids a refresh read", async () => {
    await scheduler.request("orders", "rest_1", "ord_1");
    await scheduler.request("orders", "rest_1", "ord_2");
    const seen = await scheduler.pending("orders");
    expect(seen.map((p) => p.id).sort()).toEqual(["ord_1", "ord_2"]);
    await scheduler.forgetRead("orders", seen);
    expect(await scheduler.pending("orders")).toEqual([]);
  });

  it("keeps an id noted again while a refresh was running, for the next refresh", async () => {
    await scheduler.request("orders", "rest_1", "ord_1");
    await scheduler.request("orders", "rest_1", "ord_2");
    const seen = await scheduler.pending("orders");
    // ord_1 changes again after the running sweep may already have read it.
    await scheduler.request("orders", "rest_1", "ord_1");
    await scheduler.forgetRead("orders", seen);
    expect((await scheduler.pending("orders")).map((p) => p.id)).toEqual(["ord_1"]);
  });

  it("keeps a whole-menu refresh requested while one was running, per restaurant", async () => {
    await scheduler.request("menu-items", "rest_2");
    await scheduler.request("menu-items", "rest_3");
    const seen = await scheduler.pending("menu-items");
    expect(seen.map((p) => [p.restaurantId, p.id]).sort()).toEqual([
      ["rest_2", WHOLE_MENU],
      ["rest_3", WHOLE_MENU],
    ]);
    await scheduler.request("menu-items", "rest_2");
    await scheduler.forgetRead("menu-items", seen);
    expect((await scheduler.pending("menu-items")).map((p) => [p.restaurantId, p.id])).toEqual([["rest_2", WHOLE_MENU]]);
  });

  it("schedules one job per kind for every restaurant, and keeps what the events said of each id", async () => {
    await scheduler.request("orders", "rest_1", "ord_1", { eventId: "evt_1", status: "CONFIRMED", createdAt: "2026-01-01T00:00:00.000Z" });
    // A stale delivery (an earlier status) never lowers the status noted; the event ids add up.
    await scheduler.request("orders", "rest_1", "ord_1", { eventId: "evt_0", status: "PENDING" });
    await scheduler.request("orders", "rest_2", "ord_2", { eventId: "evt_2" });
    await scheduler.request("bookings", "rest_2", "bkg_1", { eventId: "evt_3", date: "2026-12-24T00:00:00.000Z" });
    // One job per kind, whichever restaurant asked.
    expect((await queue.getDelayed()).map((j) => j.data.kind).sort()).toEqual(["bookings", "orders"]);
    const orders = await scheduler.pending("orders");
    expect(orders.map((p) => p.restaurantId).sort()).toEqual(["rest_1", "rest_2"]);
    const note = orders.find((p) => p.id === "ord_1")?.note;
    expect(note).toMatchObject({ status: "CONFIRMED", createdAt: "2026-01-01T00:00:00.000Z", eventIds: ["evt_1", "evt_0"] });
    expect((await scheduler.pending("bookings"))[0]?.note).toMatchObject({ date: "2026-12-24T00:00:00.000Z" });
  });

  it("defers an id with its new note unless an event noted it again since it was read", async () => {
    await scheduler.request("orders", "rest_1", "ord_1");
    const [read] = await scheduler.pending("orders");
    await scheduler.defer("orders", read!, { ...read!.note, misses: 1, retryAt: 42 });
    expect((await scheduler.pending("orders"))[0]?.note).toMatchObject({ misses: 1, retryAt: 42 });
    // Noted again: the event's note stands (no backoff), and a defer by the stale version is refused.
    await scheduler.request("orders", "rest_1", "ord_1");
    await scheduler.defer("orders", read!, { ...read!.note, misses: 2, retryAt: 43 });
    const [after] = await scheduler.pending("orders");
    expect(after?.note.retryAt).toBeUndefined();
    expect(after?.note.misses).toBe(1);
  });

  it("skips a damaged entry, and a new event for the id replaces its damaged note", async () => {
    const key = redisKeys(queue.opts.prefix).syncOf().pendingRefresh("orders");
    await redis.hset(key, "not json", "{}", JSON.stringify(["rest_1", "ord_1"]), "{damaged");
    expect(await scheduler.pending("orders")).toEqual([]);
    await scheduler.request("orders", "rest_1", "ord_1", { eventId: "evt_1" });
    expect((await scheduler.pending("orders")).map((p) => [p.id, p.version, p.note.eventIds])).toEqual([["ord_1", 1, ["evt_1"]]]);
  });

  it("keeps the pace a run set when it ended with nothing pending: the next event's run waits it out, not just the debounce", async () => {
    const scheduler = createRefreshQueue({ redis, queue, prefix, debounceMs: 100 });
    await scheduler.setPace("orders", 60_000);
    await scheduler.request("orders", "rest_1", "ord_1");
    await scheduler.request("bookings", "rest_1", "bkg_1");
    const delays = Object.fromEntries((await queue.getDelayed()).map((j) => [j.data.kind, j.delay]));
    expect(delays.orders).toBeGreaterThan(50_000);
    expect(delays.bookings).toBeLessThanOrEqual(100); // another kind's pace is its own
  });
  it("keeps the pace a run asked for when an event asks after it, before the run ends", async () => {
    const scheduler = createRefreshQueue({ redis, queue, prefix, debounceMs: 0 });
    const worker = new Worker<RefreshJobData>(
      "sync",
      async () => {
        // The run's paced ask for its next run, then an event in the moment before the run ends.
        await scheduler.setPace("orders", 60_000);
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
