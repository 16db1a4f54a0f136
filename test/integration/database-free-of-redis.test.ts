import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createChangeOutbox } from "../../src/mirror/change-outbox.js";
import { createPostgresMirror } from "../../src/mirror/mirror-store.js";
import type { MirrorStore } from "../../src/mirror/mirror-store.js";
import { type EventJobData, EVENTS_QUEUE } from "../../src/queue/events-queue.js";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { createApiClient } from "../../src/upstream/client.js";
import { createChangeRelay } from "../../src/worker/change-feed.js";
import { createSyncCheckpoints } from "../../src/mirror/sync-checkpoints.js";
import { runFullSlice } from "../../src/sync/full-tier.js";
import { createMirrorWriter } from "../../src/mirror/change-outbox.js";
import { createRefreshQueue } from "../../src/sync/refresh-queue.js";
import type { RefreshJobData } from "../../src/sync/refresh-queue.js";
import { orderRecord } from "../helpers/mirror-records.js";
import { openTestDatabase, type TestDatabase } from "../helpers/postgres.js";
import { startRedisServer, type RedisServer } from "../helpers/redis-server.js";

const silent = pino({ level: "silent" });

/** A promise and its resolve (Node 20 has no Promise.withResolvers). */
function signal() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** The events queue, telling when an add began (a subclass of the real one: the add is BullMQ's own). */
class WatchedQueue extends Queue<EventJobData> {
  adding = signal();
  override addBulk(...args: Parameters<Queue<EventJobData>["addBulk"]>) {
    this.adding.resolve();
    return super.addBulk(...args);
  }
}

// The embedded store's worker pool is small: whoever holds a connection across a Redis call takes it
// from every other database user for as long as Redis is away. A hang here fails at the test's timeout.
// Stopping and starting a redis-server and an embedded store take a while on a loaded machine.
describe("the embedded store while Redis does not answer", { timeout: 60_000 }, () => {
  let redisServer: RedisServer;
  let redis: Redis;
  let database: TestDatabase;
  let mirror: MirrorStore;
  beforeEach(async () => {
    redisServer = await startRedisServer();
    // Reconnect quickly once the server is back (ioredis backs off up to 2 s by default).
    redis = new Redis(redisServer.url, { maxRetriesPerRequest: null, retryStrategy: () => 50 });
    redis.on("error", () => undefined); // refused while the server is stopped
    database = await openTestDatabase("embedded");
    mirror = createPostgresMirror(database.db);
  });
  afterEach(async () => {
    await redisServer.start().catch(() => undefined);
    redis.disconnect();
    await database.close();
    await redisServer.destroy();
  });
  const outboxRows = async () =>
    Number(
      (
        await database.db
          .selectFrom("change_outbox")
          .select((eb) => eb.fn.countAll().as("n"))
          .executeTakeFirstOrThrow()
      ).n,
    );

  it("lets another database call complete while the change relay waits for Redis to take a batch", async () => {
    await createMirrorWriter(mirror).write("orders", [orderRecord("ord_1")], await mirror.clock(), "webhook");
    const queue = new WatchedQueue(EVENTS_QUEUE, { connection: redis, prefix: `test-free-${randomUUID().slice(0, 8)}` });
    queue.on("error", () => undefined);
    await queue.waitUntilReady();
    await redisServer.stop();
    const relay = createChangeRelay({
      outbox: createChangeOutbox(database.db),
      queue,
      dedupWindowMs: 60_000,
      intervalMs: 0,
      logger: silent,
    });
    const drained = relay.drain();
    await queue.adding.promise;
    // Before, the relay's transaction held the connection across the add: this waited for Redis.
    expect(await outboxRows()).toBe(1);
    await redisServer.start();
    expect(await drained).toBe(1);
    expect(await outboxRows()).toBe(0);
    await relay.stop();
    await queue.close();
  });

  it("lets another database call complete while reconciliation reads the pending ids from Redis", async () => {
    const sandbox: Sandbox = createSandbox();
    const api = createApiClient({ baseUrl: await sandbox.listen(), apiKey: sandbox.apiKey, retryBaseMs: 10 });
    const prefix = `test-free-${randomUUID().slice(0, 8)}`;
    const queue = new Queue<RefreshJobData>("sync", { connection: redis, prefix });
    queue.on("error", () => undefined);
    const scheduler = createRefreshQueue({ redis, queue, prefix, debounceMs: 60_000 });
    await queue.waitUntilReady();
    await redisServer.stop();
    // Orders held and walked whole once: the pass is no first import, so its writes ask which ids were pending.
    await mirror.upsert("orders", [orderRecord("ord_held")], await mirror.clock());
    const checkpoints = createSyncCheckpoints(database.db);
    await checkpoints.complete(await checkpoints.start("full", "orders", { firstImport: true }), { cursor: null, records: 1, pages: 1 });
    const asking = signal();
    const sweep = runFullSlice({
      api,
      mirror,
      checkpoints,
      intervalMs: 0,
      maxPages: 100,
      changes: {
        writer: createMirrorWriter(mirror),
        source: "reconcile",
        pending: (kind) => {
          asking.resolve();
          return scheduler.pending(kind);
        },
      },
    });
    try {
      await asking.promise;
      // Before, the pending ids were read inside the page's write transaction: this waited for Redis.
      expect(await outboxRows()).toBe(0);
      await redisServer.start();
      expect((await sweep).kinds.orders).toMatchObject({ state: "complete", checkpoint: { records: sandbox.state.orders().length } });
      expect(await outboxRows()).toBeGreaterThan(0);
    } finally {
      await sweep.catch(() => undefined);
      await sandbox.close();
      await queue.close();
    }
  });
});
