import { randomUUID } from "node:crypto";
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import pino from "pino";
import { afterEach, describe, expect, inject, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { createPostgresMirror } from "../../src/mirror/mirror-store.js";
import { createSyncCheckpoints } from "../../src/mirror/sync-checkpoints.js";
import { createApiClient } from "../../src/upstream/client.js";
import { createMirrorWriter } from "../../src/mirror/change-outbox.js";
import { SYNC_QUEUE } from "../../src/queue/events-queue.js";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { enqueueCatchUp, RECONCILE_JOBS, reconcileProcessors } from "../../src/sync/reconcile-jobs.js";
import { createActivePassLease } from "../../src/sync/active-pass-lease.js";
import { TEST_SECRET } from "../helpers/edge.js";
import { openTestDatabase, preferredDriver } from "../helpers/postgres.js";
import { ADMIN_TOKEN, startService, type TestService } from "../helpers/service.js";
import { waitFor } from "../helpers/wait-for.js";

let sandbox: Sandbox | undefined;
let svc: TestService | undefined;
afterEach(async () => {
  await svc?.stop();
  await sandbox?.close();
  svc = undefined;
  sandbox = undefined;
});

const reconcileNow = async (url: string) => {
  const res = await fetch(`${url}/sync/reconcile`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: "{}",
  });
  expect(res.status).toBe(202);
  return (await res.json()) as { job: string; runs: string };
};

describe("reconcile now", () => {
  it("asked while an active pass runs, is queued behind it and runs right after it (it says so), not dropped", async () => {
    sandbox = createSandbox({ rateLimit: { max: 100_000, windowMs: 60_000 } });
    const s = await startService({ API_BASE_URL: await sandbox.listen(), API_KEY: sandbox.apiKey, API_RATE: "100000" });
    svc = s;
    // A pass runs (it holds the active pass's lease, as a worker's pass does).
    const running = await createActivePassLease({ redis: s.redis, prefix: s.prefix, ttlMs: 60_000 }).hold("a-running-pass");
    expect(running).toBeDefined();

    const { job, runs } = await reconcileNow(s.url);
    expect(runs).toBe("after the running pass");
    // A change the running pass may have read past already: only the requested pass will see it.
    const order = sandbox.silently(() => sandbox!.actions.createOrder());

    const queue = new Queue(SYNC_QUEUE, { connection: s.redis, prefix: s.prefix });
    try {
      // The job ran, found the pass running and waits for it (delayed), instead of completing as skipped.
      await waitFor(async () => (await queue.getJob(job))?.isDelayed(), { what: "the request waiting behind the running pass" });
      expect(await s.service.mirror.get("orders", order.id)).toBeUndefined();
      await running!.letGo();
      await waitFor(() => s.service.mirror.get("orders", order.id), { what: "the requested pass to read the new order" });
      await waitFor(async () => (await queue.getJob(job)) === undefined, { what: "the requested pass to complete" });
      expect(await reconcileNow(s.url)).toMatchObject({ runs: "now" });
    } finally {
      await queue.close();
    }
  });

  it("a scheduled tick is skipped while a catch-up waits to run: the catch-up reads all it would", async () => {
    sandbox = createSandbox({ rateLimit: { max: 100_000, windowMs: 60_000 } });
    const s = await startService({ API_BASE_URL: await sandbox.listen(), API_KEY: sandbox.apiKey, API_RATE: "100000" });
    svc = s;
    const running = await createActivePassLease({ redis: s.redis, prefix: s.prefix, ttlMs: 60_000 }).hold("a-running-pass");
    const queue = new Queue(SYNC_QUEUE, { connection: s.redis, prefix: s.prefix });
    try {
      // The catch-up waits behind the running pass (delayed), as after a gap found while a pass ran.
      await enqueueCatchUp(queue, new Date(Date.now() - 300_000));
      await waitFor(
        async () => {
          const id = await queue.getDeduplicationJobId(RECONCILE_JOBS.catchUp);
          return id ? (await queue.getJob(id))?.isDelayed() : false;
        },
        { what: "the catch-up waiting behind the running pass" },
      );
      await running!.letGo();
      const tick = await queue.add(RECONCILE_JOBS.active, {});
      // Either the tick ran before the catch-up left the delayed set (skipped for it), or after it
      // began (skipped for the running pass): never a pass of its own.
      const answer = await waitFor(
        async () => {
          const job = await queue.getJob(tick.id!);
          return job && (await job.isCompleted())
            ? ((await queue.getJob(tick.id!))?.returnvalue as { skipped?: string } | null)
            : undefined;
        },
        { what: "the tick's answer" },
      );
      expect(answer?.skipped).toMatch(/catch-up pass is queued|active pass is running/);
    } finally {
      await queue.close();
    }
  });
});

describe("the first tick after a restart", () => {
  it("is skipped while a worker has taken the catch-up and not begun its pass: the catch-up reads all the tick would", async () => {
    sandbox = createSandbox({});
    const api = createApiClient({ baseUrl: await sandbox.listen(), apiKey: sandbox.apiKey, retryBaseMs: 10 });
    const prefix = `test-tick-${randomUUID().slice(0, 8)}`;
    const redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: null });
    const queue = new Queue(SYNC_QUEUE, { connection: redis, prefix });
    const worker = new Worker(SYNC_QUEUE, null, { connection: redis, prefix, autorun: false });
    const database = await openTestDatabase(preferredDriver());
    try {
      const mirror = createPostgresMirror(database.db);
      const config = loadConfig({ REDIS_URL: inject("redisUrl"), SIGNING_SECRET: TEST_SECRET });
      const processors = reconcileProcessors({
        account: "default",
        api,
        mirror,
        checkpoints: createSyncCheckpoints(database.db),
        writer: createMirrorWriter(mirror),
        pending: () => Promise.resolve([]),
        lease: createActivePassLease({ redis, prefix, ttlMs: 60_000 }),
        queue,
        config: config.worker,
        report: { page: () => undefined, passComplete: () => undefined },
        logger: pino({ level: "silent" }),
      });
      await enqueueCatchUp(queue, new Date(Date.now() - 300_000));
      // A worker took the catch-up (active) at the moment it took the scheduler's first tick.
      expect((await worker.getNextJob("a-worker")).name).toBe(RECONCILE_JOBS.catchUp);
      const tick = await queue.add(RECONCILE_JOBS.active, {});
      const before = sandbox.requestLog.length;
      const tickPass = processors[RECONCILE_JOBS.active];
      expect(await tickPass?.(tick, "another-slot")).toEqual({ skipped: "a catch-up pass is queued or running" });
      expect(sandbox.requestLog.length).toBe(before);
    } finally {
      await worker.close();
      await queue.obliterate({ force: true });
      await queue.close();
      await redis.quit();
      await database.close();
    }
  });
});
