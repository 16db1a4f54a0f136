import { randomUUID } from "node:crypto";
import { Queue, type Job } from "bullmq";
import { afterEach, describe, expect, inject, it } from "vitest";
import { createLogger } from "../../src/logging/logger.js";
import { SYNC_QUEUE, type EventJobData } from "../../src/queue/events-queue.js";
import { createRedisConnection } from "../../src/redis/redis.js";
import { createSyncWorker } from "../../src/worker/sync-worker.js";
import { sampleEvent } from "../helpers/edge.js";
import { nextJob } from "../helpers/job-events.js";
import { startService, type TestService } from "../helpers/service.js";
import { moduleHandlers } from "../helpers/module-handlers.js";

let svc: TestService | undefined;
afterEach(async () => {
  await svc?.stop();
  svc = undefined;
});

// The user's code: its frame (this file) is what the event log and the dashboard must point at.
function chargeLoyaltyPoints(): never {
  throw new TypeError("points service said no");
}
const handlers = moduleHandlers({ "guest.visited": () => chargeLoyaltyPoints() });
const THIS_FILE = "handler-stacks.test.ts";

async function failOnce(env: Record<string, string>): Promise<{ job: Job<EventJobData>; id: string }> {
  svc = await startService(env, [handlers]);
  const ev = sampleEvent({ type: "guest.visited", data: {} });
  const failed = nextJob(svc.service.worker!.eventWorker, "failed", (j) => j.data.id === ev.id);
  expect((await svc.deliver(ev)).status).toBe(200);
  return { job: await failed, id: ev.id };
}

describe("a failing handler's stack", () => {
  it.each([
    ["failed for good on its first attempt (a dead letter)", { JOB_ATTEMPTS: "1" }],
    ["failed for good on a retry from the events queue", { JOB_ATTEMPTS: "2", JOB_BACKOFF_MS: "20" }],
  ])("is kept in the event log and in the job's stacktrace when %s", async (_when, env) => {
    const { job, id } = await failOnce(env);
    expect(job.failedReason).toContain("TypeError: points service said no");
    // BullMQ's job.stacktrace (the dashboard's "stacktrace" tab): the handler's frames, not the worker's throw.
    const trace = (job.stacktrace ?? []).join("\n");
    expect(trace).toContain("chargeLoyaltyPoints");
    expect(trace).toContain(THIS_FILE);
    const logged = await svc!.service.eventLog.get(id);
    const outcomes = Object.values(logged?.handlers ?? {});
    expect(outcomes).toHaveLength(1);
    expect(outcomes[0]).toMatchObject({ status: "failed", error: "TypeError: points service said no" });
    expect(outcomes[0]?.stack).toMatch(/^TypeError: points service said no\n\s+at chargeLoyaltyPoints /);
    expect(outcomes[0]?.stack).toContain(THIS_FILE);
  });
});

describe("a failing handler's error text in Redis and in the event log", () => {
  it("is cut to its bound with a marker when a handler throws a 5 MB message on every attempt", async () => {
    const huge = "m".repeat(5_000_000);
    svc = await startService({ JOB_ATTEMPTS: "4", JOB_BACKOFF_MS: "10" }, [
      moduleHandlers({
        "guest.visited": () => {
          throw new Error(huge);
        },
      }),
    ]);
    const ev = sampleEvent({ type: "guest.visited", data: {} });
    const failed = nextJob(svc.service.worker!.eventWorker, "failed", (j) => j.data.id === ev.id && j.finishedOn !== undefined);
    expect((await svc.deliver(ev)).status).toBe(200);
    const job = await failed;
    // The whole job (data, failedReason, the kept stacks) as Redis holds it, after 3 attempts in the queue.
    const bytes = (await svc.redis.call("MEMORY", "USAGE", `${svc.prefix}:events:${job.id}`, "SAMPLES", "0")) as number;
    expect(bytes).toBeGreaterThan(0);
    expect(bytes).toBeLessThan(64 * 1024);
    expect(job.failedReason.length).toBeLessThan(9 * 1024);
    expect(job.failedReason).toContain("[cut: ");
    const stacks = job.stacktrace ?? [];
    expect(stacks.length).toBeGreaterThan(0);
    expect(stacks.length).toBeLessThanOrEqual(3);
    for (const stack of stacks) expect(stack.length).toBeLessThan(12 * 1024);
    const logged = await svc.service.eventLog.get(ev.id);
    const outcome = Object.values(logged?.handlers ?? {})[0];
    expect(outcome?.error?.length).toBeLessThan(9 * 1024);
    expect(outcome?.error).toContain("[cut: ");
    expect(outcome?.stack?.length).toBeLessThanOrEqual(4096 + 64);
  });
});

describe("a failing sync job's error text in Redis", () => {
  it("is cut to the same bound when a sync processor throws a 5 MB message", async () => {
    const connection = createRedisConnection(inject("redisUrl"), "worker");
    const prefix = `test-syncerr-${randomUUID().slice(0, 8)}`;
    const queue = new Queue(SYNC_QUEUE, { connection, prefix });
    const worker = createSyncWorker({
      connection,
      prefix,
      queue,
      processors: {
        boom: () => Promise.reject(new Error("s".repeat(5_000_000))),
      },
      concurrency: 2,
      lockMs: 30_000,
      maxStalls: 1,
      logger: createLogger({ level: "silent" }),
    });
    try {
      void worker.run();
      const failed = nextJob(worker, "failed");
      await queue.add("boom", {}, { attempts: 1 });
      const job = await failed;
      expect(job.failedReason.length).toBeLessThan(9 * 1024);
      expect(job.failedReason).toContain("[cut: ");
      const bytes = (await connection.call("MEMORY", "USAGE", `${prefix}:${SYNC_QUEUE}:${job.id}`, "SAMPLES", "0")) as number;
      expect(bytes).toBeGreaterThan(0);
      expect(bytes).toBeLessThan(64 * 1024);
    } finally {
      await worker.close();
      await queue.obliterate({ force: true });
      await queue.close();
      await connection.quit();
    }
  });
});
