import { randomUUID } from "node:crypto";
import { Queue, type Job } from "bullmq";
import { Redis } from "ioredis";
import { afterEach, describe, expect, inject, it } from "vitest";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { createActivePassLease } from "../../src/sync/active-pass-lease.js";
import { redisKeys } from "../../src/redis/redis.js";
import { startService, type TestService } from "../helpers/service.js";
import { waitFor } from "../helpers/wait-for.js";

// One active reconciliation pass at a time: overlapping passes split the active class's share, each
// slower, until they held every slot of the sync queue and refreshes waited behind them.

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close();
});

function redisClient(): Redis {
  const redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: null });
  cleanup.push(() => redis.quit());
  return redis;
}

describe("active pass lease", () => {
  it("admits one holder, and only the holder lets go", async () => {
    const redis = redisClient();
    const prefix = `test-lease-${randomUUID().slice(0, 8)}`;
    const lease = createActivePassLease({ redis, prefix, ttlMs: 30_000 });
    const first = await lease.hold("job-a");
    expect(first).toBeDefined();
    expect(await lease.hold("job-b")).toBeUndefined();

    // The first holder's lease lapsed (as after a crash) and another job took it: the first one's
    // letting go must not free the new holder's lease.
    await redis.del(redisKeys(prefix).syncOf().activePassLease);
    const second = await lease.hold("job-b");
    expect(second).toBeDefined();
    await first?.letGo();
    expect(await redis.get(redisKeys(prefix).syncOf().activePassLease)).toBe("job-b");
    await second?.letGo();
    expect(await lease.hold("job-d")).toBeDefined();
  });

  it("keeps a running holder's lease past its TTL by renewing it", async () => {
    const redis = redisClient();
    const prefix = `test-lease-${randomUUID().slice(0, 8)}`;
    const key = redisKeys(prefix).syncOf().activePassLease;
    // Renewed every third of its TTL; a TTL long enough that only a missing renewal lets it lapse.
    const ttlMs = 1500;
    const held = await createActivePassLease({ redis, prefix, ttlMs }).hold("job-a");
    // Four renewals seen (its time to live went up again) span more than a whole TTL; the lease is
    // there at every look.
    let renewals = 0;
    let lastTtl = ttlMs;
    await waitFor(
      async () => {
        const [value, ttl] = await Promise.all([redis.get(key), redis.pttl(key)]);
        expect(value).toBe("job-a");
        if (ttl > lastTtl) renewals++;
        lastTtl = ttl;
        return renewals >= 4;
      },
      { timeoutMs: 20_000, intervalMs: 50, what: "four renewals" },
    );
    await held?.letGo();
    expect(await redis.exists(key)).toBe(0);
  });

  it("runs one active pass at a time: a tick while one runs is skipped, not run beside it", async () => {
    const sandbox: Sandbox = createSandbox({ restaurants: 3, seed: 6, rateLimit: { max: 1_000_000, windowMs: 60_000 } });
    cleanup.push(() => sandbox.close());
    const apiUrl = await sandbox.listen();
    const svc: TestService = await startService({
      API_BASE_URL: apiUrl,
      API_KEY: sandbox.apiKey,
      WORKER_CONCURRENCY: "10",
      RECONCILE_INTERVAL_SECONDS: "3600",
      RECONCILE_ACTIVE_INTERVAL_SECONDS: "3600",
    });
    cleanup.push(() => svc.stop());
    // Slow lists: a pass takes seconds, so the ticks below find it running.
    sandbox.faults.add({ method: "GET", path: "/api/v1/orders", delayMs: 300 });
    const queue = new Queue("sync", { connection: redisClient(), prefix: svc.prefix });
    cleanup.push(() => queue.close());
    const ticks = await queue.addBulk([1, 2, 3].map(() => ({ name: "reconcile-active", data: {} })));
    const done = await waitFor(
      async () => {
        const jobs = await Promise.all(ticks.map((t) => queue.getJob(t.id ?? "")));
        return jobs.every((j) => j?.finishedOn !== undefined) && jobs;
      },
      { timeoutMs: 30_000, what: "the three ticks to finish" },
    );
    const ranPass = (j: Job | undefined) => !(j?.returnvalue as { skipped?: string } | undefined)?.skipped;
    const passes = done.filter(ranPass);
    // Every pass, the scheduler's own included, ran alone: none started before another ended.
    const all = (await queue.getCompleted()).filter((j) => j.name === "reconcile-active" && ranPass(j));
    const spans = all.map((j) => [j.processedOn ?? 0, j.finishedOn ?? 0] as const).sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < spans.length; i++) expect(spans[i]?.[0]).toBeGreaterThanOrEqual(spans[i - 1]?.[1] ?? 0);
    expect(passes.length).toBeLessThan(3);
  });
});
