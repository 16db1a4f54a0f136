import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { createRefreshScheduler, WHOLE_MENU, type RefreshJobData, type RefreshScheduler } from "../../src/worker/sync/refresh-scheduler.js";

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
    await scheduler.release("menu-items", "rest_2");
    await scheduler.request("menu-items", "rest_2");
    await scheduler.settle("menu-items", "rest_2", seen);
    expect([...(await scheduler.pending("menu-items", "rest_2")).keys()]).toEqual([WHOLE_MENU]);
    // And, released, the second request scheduled a job of its own.
    expect(await queue.getDelayedCount()).toBe(2);
  });
});
