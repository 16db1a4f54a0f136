import { Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SYNC_QUEUE } from "../../src/queue/events-queue.js";
import { redisKeys } from "../../src/redis/redis.js";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { RECONCILE_JOBS } from "../../src/sync/reconcile-jobs.js";
import { startRedisServer, type RedisServer } from "../helpers/redis-server.js";
import { startService, type TestService } from "../helpers/service.js";
import { waitFor } from "../helpers/wait-for.js";

// This file owns a Redis it can empty under a running worker.
let redis: RedisServer;
let sandbox: Sandbox;
let svc: TestService;
let syncQueue: Queue;
beforeAll(async () => {
  redis = await startRedisServer();
  sandbox = createSandbox({ rateLimit: { max: 100_000, windowMs: 60_000 } });
  svc = await startService({
    ROLE: "worker",
    REDIS_URL: redis.url,
    API_BASE_URL: await sandbox.listen(),
    API_KEY: sandbox.apiKey,
    API_RATE: "100000",
    RECONCILE_INTERVAL_SECONDS: "3600",
    RECONCILE_ACTIVE_INTERVAL_SECONDS: "3600",
    SYNC_WATCH_INTERVAL_SECONDS: "1",
  });
  syncQueue = new Queue(SYNC_QUEUE, { connection: svc.redis, prefix: svc.prefix });
});
afterAll(async () => {
  await syncQueue.close();
  await svc.stop();
  await sandbox.close();
  await redis.destroy();
});

const SCHEDULERS = [RECONCILE_JOBS.full, RECONCILE_JOBS.active, "prune-events"];
const catchUpsDone = () => svc.logs.records().filter((r) => r.msg === "catch-up reconciliation pass done");

describe("a worker whose Redis lost its data", () => {
  it("recreates its job schedulers and the ingest stream's consumer group, and catches up once", async () => {
    for (const id of SCHEDULERS) expect(await syncQueue.getJobScheduler(id), id).toBeDefined();
    // The first start ever: no mark in PostgreSQL, nothing to catch up.
    expect(catchUpsDone()).toEqual([]);

    await svc.redis.flushall();
    expect(await syncQueue.getJobScheduler(RECONCILE_JOBS.active)).toBeUndefined();

    const keys = redisKeys(svc.prefix);
    await waitFor(
      async () => {
        for (const id of SCHEDULERS) if (!(await syncQueue.getJobScheduler(id))) return false;
        const groups = (await svc.redis.xinfo("GROUPS", keys.ingest.stream)) as unknown[][];
        return groups.some((g) => g.includes(keys.ingest.group));
      },
      { what: "the schedulers and the consumer group back", timeoutMs: 30_000 },
    );
    const [done] = await waitFor(() => catchUpsDone().length > 0 && catchUpsDone(), { what: "a catch-up pass", timeoutMs: 60_000 });
    expect(done).toMatchObject({ catchUp: { gapStart: expect.any(String) as unknown } });
    expect(catchUpsDone()).toHaveLength(1);
  }, 120_000);
});
