import { spawn } from "node:child_process";
import { once } from "node:events";
import { randomUUID } from "node:crypto";
import { Queue, type Job, type Worker } from "bullmq";
import { Redis } from "ioredis";
import pino from "pino";
import { afterEach, describe, expect, inject, it } from "vitest";
import { SYNC_QUEUE } from "../../src/queue/events-queue.js";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import {
  createRefreshJob,
  createRefreshPace,
  createRefreshQueue,
  type RefreshQueue,
  type RefreshJobData,
} from "../../src/sync/refresh-queue.js";
import type { RefreshOutcome } from "../../src/sync/refresh-kind.js";
import type { SyncedKind } from "../../src/mirror/kinds.js";
import { createSyncWorker } from "../../src/worker/sync-worker.js";
import { waitForQueuesIdle } from "../helpers/queues-idle.js";
import { startService, type TestService } from "../helpers/service.js";
import { waitFor } from "../helpers/wait-for.js";

// One refresh of a kind at a time, as one mechanism (refresh-queue.ts runWithin): the kind's
// BullMQ job, deduplicated from its add until it ends. Two jobs taking the same pending ids at once
// would make the same reads twice, and under a saturated budget (long jobs) that doubling fed itself.
// The reads here stand in for refresh-kind.ts's (which reads the API): they take the due pending
// ids, wait while the test holds them, and forget what they took as it does (or defer a miss).

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close();
});

const redisUrl = () => inject("redisUrl");
function connection(): Redis {
  const redis = new Redis(redisUrl(), { maxRetriesPerRequest: null });
  cleanup.push(() => redis.quit());
  return redis;
}

interface Run {
  jobId: string | undefined;
  took: string[];
  startedAt: number;
}

/** The reads of every worker of a test: who ran when, what each took; held at the test's word. */
function createReads() {
  const runs: Run[] = [];
  const misses = new Map<string, { backoffMs: number; retryAt?: number }>();
  const held: (() => void)[] = [];
  const startWaiters: { n: number; resolve: () => void }[] = [];
  let holding = false;
  let reading = 0;
  let mostAtOnce = 0;
  const read = async (scheduler: RefreshQueue, kind: SyncedKind, jobId: string | undefined): Promise<RefreshOutcome> => {
    reading++;
    mostAtOnce = Math.max(mostAtOnce, reading);
    const startedAt = Date.now();
    const taken = (await scheduler.pending(kind)).filter((p) => (p.note.retryAt ?? 0) <= startedAt);
    runs.push({ jobId, took: taken.map((t) => t.id).sort(), startedAt });
    for (const w of startWaiters.filter((w) => runs.length >= w.n)) w.resolve();
    if (holding) await new Promise<void>((resolve) => held.push(resolve));
    for (const t of taken) {
      const miss = misses.get(t.id);
      misses.delete(t.id);
      if (!miss) await scheduler.forgetRead(kind, [t]);
      else {
        miss.retryAt = Date.now() + miss.backoffMs;
        await scheduler.defer(kind, t, { ...t.note, misses: 1, retryAt: miss.retryAt });
      }
    }
    reading--;
    return { calls: 0, reads: 0, written: 0, found: taken.length, missing: [], unlisted: [] };
  };
  return {
    runs,
    read,
    reading: () => reading,
    mostAtOnce: () => mostAtOnce,
    /** The next read of `id` misses it: kept pending with a retry `backoffMs` later (as refresh-kind.ts defers a miss). */
    miss(id: string, backoffMs: number) {
      const miss = { backoffMs } as { backoffMs: number; retryAt?: number };
      misses.set(id, miss);
      return miss;
    },
    hold() {
      holding = true;
    },
    letGo() {
      holding = false;
      for (const go of held.splice(0)) go();
    },
    /** Resolves once `n` reads have started. */
    started(n: number): Promise<Run[]> {
      return new Promise((resolve) => {
        if (runs.length >= n) resolve(runs);
        else startWaiters.push({ n, resolve: () => resolve(runs) });
      });
    },
  };
}

type Reads = ReturnType<typeof createReads>;

/** A queue, a scheduler, and `processes` sync workers (each its own connection and scheduler, as processes have). */
function harness(opts: {
  debounceMs: number;
  processes: number;
  paceMs?: number;
  lockMs?: number;
  prefix?: string;
  /** Called as a run, having read what is pending, looks at the budget for the next run's pace. */
  duringLook?: () => Promise<void>;
}) {
  const prefix = opts.prefix ?? `test-refresh-${randomUUID().slice(0, 8)}`;
  const queue = new Queue<RefreshJobData>(SYNC_QUEUE, { connection: connection(), prefix });
  const scheduler = createRefreshQueue({ redis: connection(), queue, prefix, debounceMs: opts.debounceMs });
  const reads = createReads();
  const workers: Worker[] = [];
  // The production pace: with `paceMs`, a budget the webhook class spends at its full share (that
  // long every run); without, an idle one (no wait).
  const pace = createRefreshPace({
    state: async () => {
      await opts.duringLook?.();
      return { recentPerWindowByClass: { webhook: opts.paceMs ? 120 : 0, active: 0, full: 0 }, max: 120 };
    },
    share: 0.75,
    maxWaitMs: opts.paceMs ?? 1,
  });
  const startWorker = () => {
    const redis = connection();
    const ownQueue = new Queue<RefreshJobData>(SYNC_QUEUE, { connection: redis, prefix });
    const own = createRefreshQueue({ redis, queue: ownQueue, prefix, debounceMs: opts.debounceMs });
    const logger = pino({ level: "silent" });
    // The production job, its read told which job it runs in.
    const refresh = (job: Job) => createRefreshJob({ scheduler: own, pace, logger, refresh: (kind) => reads.read(own, kind, job.id) })(job);
    const worker = createSyncWorker({
      connection: redis,
      prefix,
      queue: ownQueue,
      processors: { refresh },
      concurrency: 10,
      lockMs: opts.lockMs ?? 30_000,
      maxStalls: 1,
      logger,
    });
    void worker.run();
    workers.push(worker);
    cleanup.push(async () => {
      reads.letGo();
      await worker.close();
      await ownQueue.close();
    });
  };
  for (let i = 0; i < opts.processes; i++) startWorker();
  cleanup.push(async () => {
    reads.letGo();
    await queue.obliterate({ force: true });
    await queue.close();
  });
  const idle = () => waitForQueuesIdle([queue as Queue], { timeoutMs: 20_000, what: "the refresh jobs to end" });
  return { prefix, queue, scheduler, reads, startWorker, idle };
}

const tookOf = (reads: Reads) => reads.runs.map((r) => r.took);

describe("one refresh of a kind at a time (one BullMQ job per kind)", () => {
  it("runs one read of a kind at a time across processes, and a change noted during a read (even one it read past) gets the next run", async () => {
    const h = harness({ debounceMs: 0, processes: 2 });
    h.reads.hold();
    await h.scheduler.request("orders", "rest_1", "ord_1");
    await h.reads.started(1);
    // While it reads: ord_1 changes again (the read may have passed it), ord_2 changes, and two
    // refresh jobs outside the kind's deduplication arrive (as an older version queued them).
    await h.scheduler.request("orders", "rest_1", "ord_1");
    await h.scheduler.request("orders", "rest_2", "ord_2");
    const strays = await h.queue.addBulk([1, 2].map(() => ({ name: "refresh", data: { kind: "orders" as const } })));
    const answers = await waitFor(
      async () => {
        const jobs = await Promise.all(strays.map((s) => h.queue.getJob(s.id ?? "")));
        return jobs.every((j) => j?.finishedOn !== undefined) && jobs.map((j) => j?.returnvalue as unknown);
      },
      { what: "the stray jobs to end" },
    );
    // They read nothing: they asked for the kind's job instead.
    expect(answers).toEqual([{ handedOver: true }, { handedOver: true }]);
    expect(tookOf(h.reads)).toEqual([["ord_1"]]);
    expect(h.reads.reading()).toBe(1);
    h.reads.letGo();
    await h.idle();
    // One run after the first, with both changes; never two reads at once.
    expect(tookOf(h.reads)).toEqual([["ord_1"], ["ord_1", "ord_2"]]);
    expect(h.reads.mostAtOnce()).toBe(1);
    expect(await h.scheduler.pending("orders")).toEqual([]);
  });

  it("keeps one job of a kind waiting: a burst makes one job, and a burst during a run one run after it", async () => {
    const h = harness({ debounceMs: 60_000, processes: 1 });
    await Promise.all(Array.from({ length: 50 }, (_, i) => h.scheduler.request("orders", `rest_${i % 5}`, `ord_a${i}`)));
    const waiting = await h.queue.getDelayed();
    expect(waiting.map((j) => j.data.kind)).toEqual(["orders"]);
    // The debounce's end, brought forward.
    h.reads.hold();
    await waiting[0]!.promote();
    await h.reads.started(1);
    await Promise.all(Array.from({ length: 50 }, (_, i) => h.scheduler.request("orders", `rest_${i % 5}`, `ord_b${i}`)));
    // Kept by BullMQ for when the run ends: no job of its own meanwhile.
    expect(await h.queue.getJobCounts("active", "waiting", "delayed", "prioritized")).toEqual({
      active: 1,
      waiting: 0,
      delayed: 0,
      prioritized: 0,
    });
    h.reads.letGo();
    await h.idle();
    expect(h.reads.runs.map((r) => r.took.length)).toEqual([50, 50]);
    expect(h.reads.runs[1]!.took.every((id) => id.startsWith("ord_b"))).toBe(true);
  });

  it("runs a backed-off id at its retry time, never swallows a shorter wait, and runs an event's id at once, not after a backoff", async () => {
    const h = harness({ debounceMs: 0, processes: 1 });
    // ord_slow is not listed yet: the next run is a minute off.
    h.reads.miss("ord_slow", 60_000);
    await h.scheduler.request("orders", "rest_1", "ord_slow");
    await waitFor(async () => (await h.queue.getJobCounts("active", "delayed")).delayed === 1 && h.reads.runs.length === 1, {
      what: "the minute's wait",
    });
    // An event for another id: read now, not in a minute. That read misses it, with a short backoff.
    const short = h.reads.miss("ord_2", 300);
    await h.scheduler.request("orders", "rest_1", "ord_2");
    // The short retry runs at its time, before the minute's: it is not swallowed by it.
    const runs = await h.reads.started(3);
    expect(runs.map((r) => r.took)).toEqual([["ord_slow"], ["ord_2"], ["ord_2"]]);
    expect(runs[2]!.startedAt).toBeGreaterThanOrEqual(short.retryAt!);
    // An event for the backed-off id itself: read at once.
    await h.scheduler.request("orders", "rest_1", "ord_slow");
    await h.idle();
    expect(tookOf(h.reads)).toEqual([["ord_slow"], ["ord_2"], ["ord_2"], ["ord_slow"]]);
  });

  it("runs an event noted while a run asks for its next run at once, not after the backoff that run asks for", async () => {
    let event: (() => Promise<void>) | undefined;
    const h = harness({ debounceMs: 0, processes: 1, duringLook: () => event?.() ?? Promise.resolve() });
    h.reads.miss("ord_slow", 60_000);
    // Noted after the run's look read the pending ids, before it asks for a minute's wait.
    event = async () => {
      event = undefined;
      await h.scheduler.request("orders", "rest_2", "ord_new");
    };
    await h.scheduler.request("orders", "rest_1", "ord_slow");
    const runs = await h.reads.started(2);
    expect(runs.map((r) => r.took)).toEqual([["ord_slow"], ["ord_new"]]);
  });

  it("paces the next run as its delay: nothing is held while it waits, and the events meanwhile join its batch", async () => {
    const h = harness({ debounceMs: 0, processes: 1, paceMs: 60_000 });
    h.reads.hold();
    await h.scheduler.request("orders", "rest_1", "ord_1");
    await h.reads.started(1);
    await h.scheduler.request("orders", "rest_1", "ord_2");
    h.reads.letGo();
    const [next] = await waitFor(async () => (await h.queue.getActiveCount()) === 0 && (await h.queue.getDelayed()), {
      what: "the paced next run",
    });
    // Events during the pace: they join the waiting run (the same job), none runs sooner.
    await h.scheduler.request("orders", "rest_2", "ord_3");
    await h.scheduler.request("orders", "rest_1", "ord_4");
    expect((await h.queue.getDelayed()).map((j) => j.id)).toEqual([next!.id]);
    expect(await h.queue.getActiveCount()).toBe(0);
    expect(tookOf(h.reads)).toEqual([["ord_1"]]);
    // The pace's end, brought forward: one read for the three.
    await next!.promote();
    await h.idle();
    expect(tookOf(h.reads)).toEqual([["ord_1"], ["ord_2", "ord_3", "ord_4"]]);
  });

  it("a holder killed mid-read holds the kind only until BullMQ finds its job stalled, and the next run reads its ids", async () => {
    const prefix = `test-refresh-${randomUUID().slice(0, 8)}`;
    const lockMs = 1000;
    const child = spawn(process.execPath, ["--import", "tsx", "test/helpers/refresh-holder.ts", redisUrl(), prefix, String(lockMs)], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    cleanup.push(() => Promise.resolve(child.exitCode === null && child.signalCode === null && child.kill("SIGKILL")));
    const h = harness({ debounceMs: 0, processes: 0, lockMs, prefix });
    const reading = new Promise<void>((resolve) => child.stdout.on("data", (d: Buffer) => d.toString().includes("reading") && resolve()));
    await h.scheduler.request("orders", "rest_1", "ord_1");
    await reading;
    const [held] = await h.queue.getActive();
    // Noted while the holder reads; then the holder dies mid-read.
    await h.scheduler.request("orders", "rest_2", "ord_2");
    child.kill("SIGKILL");
    await once(child, "exit");
    h.startWorker();
    await h.idle();
    // The same job ran again once its lock lapsed (BullMQ's stalled-job handling) and read both ids.
    expect(h.reads.runs[0]).toMatchObject({ jobId: held!.id, took: ["ord_1", "ord_2"] });
    expect((await h.queue.getJob(held!.id!))?.stalledCounter).toBe(1);
    expect(h.reads.runs.slice(1).every((r) => r.took.length === 0)).toBe(true);
    expect(await h.scheduler.pending("orders")).toEqual([]);
  });
});

describe("one refresh of a kind at a time, in the service", () => {
  it("runs refresh jobs of a kind one after the other: one reads, the others call nothing", async () => {
    const sandbox: Sandbox = createSandbox({ restaurants: 3, seed: 5, rateLimit: { max: 1_000_000, windowMs: 60_000 } });
    cleanup.push(() => sandbox.close());
    const apiUrl = await sandbox.listen();
    const svc: TestService = await startService({ API_BASE_URL: apiUrl, API_KEY: sandbox.apiKey, WORKER_CONCURRENCY: "10" });
    cleanup.push(() => svc.stop());
    // Slow lists: a second read of the kind would start while the first still reads.
    sandbox.faults.add({ method: "GET", path: "/api/v1/orders", delayMs: 300 });

    const orders = [1, 2, 3].map((n) => sandbox.silently(() => sandbox.actions.createOrder({ restaurantId: `rest_${n}` })));
    const queue = new Queue<RefreshJobData>(SYNC_QUEUE, { connection: connection(), prefix: svc.prefix });
    cleanup.push(() => queue.close());
    const scheduler = createRefreshQueue({ redis: connection(), queue, prefix: svc.prefix, debounceMs: 0 });
    const from = sandbox.requestLog.length;
    await Promise.all(orders.map((o) => scheduler.request("orders", o.restaurantId, o.id, { status: o.status, createdAt: o.createdAt })));
    // Two more refresh jobs of the kind at once, as an older version could have queued them.
    await queue.addBulk([1, 2].map(() => ({ name: "refresh", data: { kind: "orders" as const } })));
    await waitForQueuesIdle([queue as Queue], { timeoutMs: 30_000, what: "the refresh jobs to end" });
    const calls = (await queue.getCompleted())
      .filter((j) => j.name === "refresh")
      .map((j) => (j.returnvalue as { calls?: number }).calls ?? 0);
    const made = sandbox.requestLog.slice(from).filter((r) => r.path === "/api/v1/orders").length;
    // One job read them all; the others made no call.
    expect(calls.filter((n) => n > 0)).toEqual([made]);
    expect(made).toBeGreaterThan(0);
    for (const o of orders)
      expect(((await svc.service.mirror.get("orders", o.id)) as { status?: string } | undefined)?.status).toBe(o.status);
  });
});
