import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import calculateSlot from "cluster-key-slot";
import { Cluster } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createRedisConnection, type RedisClient, redisKeys } from "../../src/redis/redis.js";
import { createRateLimiter } from "../../src/upstream/rate-limiter.js";
import { createRefreshQueue } from "../../src/sync/refresh-queue.js";
import type { RefreshJobData } from "../../src/sync/refresh-queue.js";
import type { EventHandlers } from "../../src/worker/handlers.js";
import { sampleEvent } from "../helpers/edge.js";
import { nextFinished } from "../helpers/job-events.js";
import { freePort } from "../helpers/redis-server.js";
import { startRedisCluster, type RedisCluster } from "../helpers/redis-cluster.js";
import { startService, type TestService } from "../helpers/service.js";
import { startStack, type Stack } from "../helpers/stack.js";

// One three-master cluster for this file only; every other file uses the single test Redis.
let cluster: RedisCluster | undefined;
beforeAll(async () => {
  cluster = await startRedisCluster();
}, 60_000);
afterAll(async () => {
  await cluster?.destroy();
});

let svc: TestService | undefined;
let stack: Stack | undefined;
let conns: RedisClient[] = [];
let queues: Queue[] = [];
afterEach(async () => {
  await svc?.stop();
  await stack?.stop();
  for (const q of queues) await q.obliterate({ force: true }).then(() => q.close());
  await Promise.all(conns.map((c) => c.quit()));
  svc = stack = undefined;
  conns = [];
  queues = [];
});

const clusterEnv = () => ({ REDIS_URL: cluster!.url, REDIS_CLUSTER: "true" });

/** A worker-kind cluster connection, ready, closed after the test. */
async function connect(): Promise<RedisClient> {
  const conn = createRedisConnection(cluster!.url, "worker", { cluster: true });
  conns.push(conn);
  if (conn.status !== "ready") await new Promise((resolve) => conn.once("ready", resolve));
  return conn;
}

/** Which master holds a key, by the cluster's own slot table. */
function masterOf(conn: RedisClient, key: string): string {
  const slot = (conn as Cluster).slots[calculateSlot(key)];
  return slot?.[0] ?? "unknown";
}

describe("on a three-master Redis Cluster (REDIS_CLUSTER=true)", () => {
  it("runs the whole service: accepts signed webhooks, drops a redelivery, runs the handlers", async () => {
    const seen: string[] = [];
    const handlers: EventHandlers = { "review.created": (e) => void seen.push(e.data.id) };
    svc = await startService(clusterEnv(), [handlers]);
    expect(svc.prefix).toMatch(/^\{test-[0-9a-f]{8}\}$/);
    const event = sampleEvent({ type: "review.created", data: { id: "rev_cluster", restaurantId: "rest_1", rating: 4, comment: "ok" } });
    const done = nextFinished(svc.service.worker!, "completed", (e) => e.id === event.id);

    const first = await svc.deliver(event);
    expect(first.status).toBe(200);
    expect(await first.json()).toMatchObject({ duplicate: false });
    await done;
    const again = await svc.deliver(event);
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ duplicate: true });

    expect(seen).toEqual(["rev_cluster"]);
    expect(await svc.service.mirror.get("reviews", "rev_cluster")).toMatchObject({ rating: 4 });
    expect(await svc.service.eventsQueue.getJobCounts("waiting", "active", "delayed", "completed", "failed")).toEqual({
      waiting: 0,
      active: 0,
      delayed: 0,
      completed: 0, // handled straight from the ingest stream
      failed: 0,
    });
    expect((await svc.admin("/readyz")).status).toBe(200);
  });

  it("keeps the mirror equal to the API through refreshes (scheduler, rate limiter)", async () => {
    stack = await startStack({ thin: true, env: clusterEnv() });
    const a = stack.sandbox.actions;
    const orders = Array.from({ length: 4 }, (_, i) => a.createOrder({ restaurantId: `rest_${(i % 2) + 1}`, paid: true }));
    for (const o of orders) a.updateOrderStatus(o.id, "CONFIRMED");
    const booking = a.createBooking({
      restaurantId: "rest_2",
      date: "2026-12-24",
      time: "19:30",
      partySize: 4,
      diner: { name: "Ada", email: "ada@example.com" },
    });
    await stack.drained();
    const truth = new Map(stack.sandbox.state.orders().map((o) => [o.id, o]));
    for (const o of orders) expect(await stack.svc.service.mirror.get("orders", o.id)).toEqual(truth.get(o.id));
    expect(await stack.svc.service.mirror.get("bookings", booking.id)).toEqual(
      stack.sandbox.state.bookings().find((b) => b.id === booking.id),
    );
    expect(stack.svc.logs.records().filter((r) => Number(r.level) >= 50)).toEqual([]);
  });

  it("shares one rate budget between two clients: acquires, and pauses everyone", async () => {
    const prefix = `test-${randomUUID().slice(0, 8)}`; // no tag of its own: the budget's {keyId} keeps the keys together
    const [c1, c2] = [await connect(), await connect()];
    const a = createRateLimiter({ redis: c1, keyId: "k1", prefix, max: 2, windowMs: 60_000, safetyMs: 0 });
    const b = createRateLimiter({ redis: c2, keyId: "k1", prefix, max: 2, windowMs: 60_000, safetyMs: 0 });
    await a.acquire();
    expect((await b.state()).inWindow).toBe(1);
    await b.pause(60_000);
    expect((await a.state()).pausedForMs).toBeGreaterThan(0);
    // Paused: the next acquire waits until aborted instead of taking a slot.
    const aborted = new AbortController();
    const waiting = a.acquire({ signal: aborted.signal });
    aborted.abort(new Error("gave up"));
    await expect(waiting).rejects.toThrow("gave up");
    expect((await b.state()).inWindow).toBe(1);
    // Different API keys spread over the masters rather than all sitting on one.
    const keys = redisKeys(prefix);
    const masters = new Set(["k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8"].map((k) => masterOf(c1, keys.upstreamBudget(k).log)));
    expect(masters.size).toBeGreaterThan(1);
  });

  it("runs the refresh scheduler: request, pending, forgetRead, with one debounced job per kind", async () => {
    const prefix = `{test-${randomUUID().slice(0, 8)}}`;
    const redis = await connect();
    const queue = new Queue<RefreshJobData>("sync", { connection: redis, prefix });
    queues.push(queue);
    const scheduler = createRefreshQueue({ redis, queue, prefix, debounceMs: 60_000 });
    await scheduler.request("orders", "rest_1", "ord_1");
    await scheduler.request("orders", "rest_1", "ord_2");
    await scheduler.request("orders", "rest_2", "ord_3", { eventId: "evt_3", status: "READY" });
    expect(await queue.getDelayedCount()).toBe(1);
    const seen = (await scheduler.pending("orders")).sort((a, b) => a.id.localeCompare(b.id));
    expect(seen.map((p) => [p.restaurantId, p.id, p.note.status])).toEqual([
      ["rest_1", "ord_1", undefined],
      ["rest_1", "ord_2", undefined],
      ["rest_2", "ord_3", "READY"],
    ]);
    await scheduler.request("orders", "rest_1", "ord_2"); // noted again while "refreshing"
    await scheduler.forgetRead("orders", seen);
    expect((await scheduler.pending("orders")).map((p) => p.id)).toEqual(["ord_2"]);
  });

  it("fails fast on the edge's connection while no node answers", async () => {
    const nowhere = createRedisConnection(`redis://127.0.0.1:${await freePort()}`, "web", { cluster: true });
    nowhere.on("error", () => undefined); // refused: the test expects exactly that
    try {
      await expect(nowhere.ping()).rejects.toThrow(/enableOfflineQueue|isn't ready|closed/i);
    } finally {
      nowhere.disconnect();
    }
  });
});
