import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { redisKeys } from "../../src/redis/keys.js";
import {
  createRefreshScheduler,
  PENDING_REFRESH_TTL_MS,
  WHOLE_MENU,
  type RefreshJobData,
  type RefreshScheduler,
} from "../../src/worker/sync/refresh-scheduler.js";

let redis: Redis;
let queue: Queue<RefreshJobData>;
let scheduler: RefreshScheduler;
beforeEach(() => {
  const prefix = `test-sched-${randomUUID().slice(0, 8)}`;
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
  it("gives the pending ids an expiry, set again by every request (a hash nobody settles does not stay forever)", async () => {
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

  it("forgets the ids a refresh handled", async () => {
    await scheduler.request("orders", "rest_1", "ord_1");
    await scheduler.request("orders", "rest_1", "ord_2");
    const seen = await scheduler.pending("orders", "rest_1");
    expect([...seen.keys()].sort()).toEqual(["ord_1", "ord_2"]);
    await scheduler.settle("orders", "rest_1", seen);
    expect((await scheduler.pending("orders", "rest_1")).size).toBe(0);
  });

  it("keeps an id noted again while a refresh was running, for the next refresh", async () => {
    await scheduler.request("orders", "rest_1", "ord_1");
    await scheduler.request("orders", "rest_1", "ord_2");
    const seen = await scheduler.pending("orders", "rest_1");
    // ord_1 changes again after the running sweep may already have read it.
    await scheduler.request("orders", "rest_1", "ord_1");
    await scheduler.settle("orders", "rest_1", seen);
    expect([...(await scheduler.pending("orders", "rest_1")).keys()]).toEqual(["ord_1"]);
  });

  it("keeps a whole-menu refresh requested while one was running", async () => {
    await scheduler.request("menu-items", "rest_2");
    const seen = await scheduler.pending("menu-items", "rest_2");
    expect([...seen.keys()]).toEqual([WHOLE_MENU]);
    await scheduler.release("menu-items");
    await scheduler.request("menu-items", "rest_2");
    await scheduler.settle("menu-items", "rest_2", seen);
    expect([...(await scheduler.pending("menu-items", "rest_2")).keys()]).toEqual([WHOLE_MENU]);
    // And, released, the second request scheduled a job of its own.
    expect(await queue.getDelayedCount()).toBe(2);
  });
});
