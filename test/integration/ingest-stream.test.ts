import { Queue, Worker } from "bullmq";
import { afterEach, describe, expect, it } from "vitest";
import { EVENTS_QUEUE, type EventJobData } from "../../src/queue/events-queue.js";
import { ENTRY_FIELD, jobOfEntry } from "../../src/queue/ingest-stream.js";
import { redisKeys } from "../../src/redis/redis.js";
import type { EventHandlers } from "../../src/worker/handlers.js";
import { sampleEvent, startEdge, type TestEdge } from "../helpers/edge.js";
import { startConsumer, streamDrained } from "../helpers/stream-consumer.js";
import { ADMIN_TOKEN, startService, type TestService } from "../helpers/service.js";
import { waitForQueuesIdle } from "../helpers/queues-idle.js";
import { waitFor } from "../helpers/wait-for.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
const edgeFor = async (env: Record<string, string> = {}) => {
  const edge = await startEdge(env);
  cleanups.push(() => edge.stop());
  return edge;
};
const serviceFor = async (env: Record<string, string>, handlers: EventHandlers[]) => {
  const svc = await startService(env, handlers);
  cleanups.push(() => svc.stop());
  return svc;
};
/** Handler runs per event id, counted by a '*' handler. */
const counting = () => {
  const runs = new Map<string, number>();
  return { runs, handlers: { "*": (e: { id: string }) => void runs.set(e.id, (runs.get(e.id) ?? 0) + 1) } as EventHandlers };
};
/** Once the stream is empty, every event finished or is in BullMQ; once the queue is idle too, nothing more runs. */
const drained = async (svc: TestService) => {
  await streamDrained(svc.redis, svc.prefix);
  await waitForQueuesIdle([svc.service.eventsQueue], { timeoutMs: 15_000, what: "the events queue to be idle" });
};

describe("ingest stream: acknowledgement and deduplication", () => {
  it("answers 200 only once the event and its seen key are in Redis", async () => {
    const edge = await edgeFor({ DEDUP_WINDOW_SECONDS: "600" });
    const event = sampleEvent();
    const res = await edge.postSigned(event);
    expect(res.status).toBe(200);
    const [entry] = await edge.redis.xrange(redisKeys(edge.prefix).ingest.stream, "-", "+");
    expect(JSON.parse(entry![1][entry![1].indexOf(ENTRY_FIELD) + 1]!)).toMatchObject({ id: event.id, payload: event });
    const seen = redisKeys(edge.prefix).ingest.seen(event.id);
    expect(await edge.redis.get(seen)).toBe(entry![0]);
    expect(await edge.redis.pttl(seen)).toBeGreaterThan(590_000);
  });

  it("fires the same event 20 times at once: one 200 that is not a duplicate, one handler run, one attempt logged", async () => {
    const { runs, handlers } = counting();
    const svc = await serviceFor({}, [handlers]);
    const event = sampleEvent({ type: "loyalty.points_awarded" });
    const answers = await Promise.all(Array.from({ length: 20 }, () => svc.deliver(event)));
    expect(answers.map((r) => r.status)).toEqual(Array(20).fill(200));
    const bodies = (await Promise.all(answers.map((r) => r.json()))) as { duplicate: boolean }[];
    expect(bodies.filter((b) => !b.duplicate)).toHaveLength(1);
    await drained(svc);
    expect(runs.get(event.id)).toBe(1);
    expect(await svc.service.eventLog.get(event.id)).toMatchObject({ status: "handled", attempts: 1 });
    // Handled straight from the stream: no BullMQ job was needed.
    expect(await svc.service.eventsQueue.getJobCountByTypes("completed", "failed", "waiting", "active", "delayed")).toBe(0);
  });
});

describe("ingest stream: a consumer that dies", () => {
  /** What a worker that died mid-batch leaves: entries read by its consumer, never acknowledged. */
  const readAsDeadConsumer = async (edge: TestEdge) => {
    const { stream, group } = redisKeys(edge.prefix).ingest;
    await edge.redis.xgroup("CREATE", stream, group, "0", "MKSTREAM");
    const reply = (await edge.redis.xreadgroup("GROUP", group, "dead-consumer", "COUNT", 100, "STREAMS", stream, ">")) as [
      string,
      [string, string[]][],
    ][];
    return reply[0]![1];
  };

  it("entries it read are claimed by another consumer and handled in the events queue", async () => {
    const edge = await edgeFor();
    const events = [sampleEvent(), sampleEvent(), sampleEvent()];
    for (const e of events) expect((await edge.postSigned(e)).status).toBe(200);
    expect(await readAsDeadConsumer(edge)).toHaveLength(3);

    const handled: string[] = [];
    const worker = new Worker<EventJobData>(
      EVENTS_QUEUE,
      (job) => {
        handled.push(job.data.id);
        return Promise.resolve();
      },
      {
        connection: edge.redis.duplicate({ maxRetriesPerRequest: null }),
        prefix: edge.prefix,
      },
    );
    cleanups.push(() => worker.close());
    let claimed = 0;
    const consumer = startConsumer(edge.redis, edge.prefix, { claimIdleMs: 100, onClaimed: (n) => (claimed += n) });
    cleanups.push(() => consumer.stop());
    await streamDrained(edge.redis, edge.prefix);
    await waitForQueuesIdle([edge.queue], { timeoutMs: 15_000, what: "the events queue to be idle" });
    expect(handled.sort()).toEqual(events.map((e) => e.id).sort());
    expect(claimed).toBe(3);
  });

  it("claimed, moved, then the claimer died before XACK: moved again and still handled once, though its job was removed", async () => {
    const edge = await edgeFor();
    const event = sampleEvent();
    expect((await edge.postSigned(event)).status).toBe(200);
    const [[entryId, fields]] = (await readAsDeadConsumer(edge)) as [[string, string[]]];
    // The claiming consumer's addBulk got through; its XACK never did.
    const deadQueue = new Queue(EVENTS_QUEUE, {
      connection: edge.redis,
      prefix: edge.prefix,
      defaultJobOptions: { removeOnComplete: true },
    });
    cleanups.push(() => deadQueue.close());
    await deadQueue.addBulk([jobOfEntry(entryId, fields[fields.indexOf(ENTRY_FIELD) + 1]!, 3_600_000)]);

    let runs = 0;
    const worker = new Worker(
      EVENTS_QUEUE,
      () => {
        runs++;
        return Promise.resolve();
      },
      {
        connection: edge.redis.duplicate({ maxRetriesPerRequest: null }),
        prefix: edge.prefix,
      },
    );
    cleanups.push(() => worker.close());
    await new Promise((resolve) => worker.once("completed", resolve));
    expect(await edge.queue.getJob(entryId)).toBeUndefined(); // removed on completion

    const consumer = startConsumer(edge.redis, edge.prefix, { claimIdleMs: 100 });
    cleanups.push(() => consumer.stop());
    await streamDrained(edge.redis, edge.prefix);
    await waitForQueuesIdle([edge.queue], { timeoutMs: 15_000, what: "the events queue to be idle" });
    expect(runs).toBe(1);
    expect(await edge.queue.getJobCountByTypes("completed", "failed", "waiting", "active", "delayed")).toBe(0);
  });
});

describe("ingest stream: a consumer whose handlers run long", () => {
  it("keeps an entry in flight (as a lock is extended): another consumer does not take it over while it runs", async () => {
    const edge = await edgeFor();
    // Long enough that only a missing heartbeat (every third of it) lets the entry go idle this
    // long, not a busy host's late timer.
    const claimIdleMs = 3000;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let running!: () => void;
    const inHandler = new Promise<void>((r) => (running = r));
    let runs = 0;
    const outcomes: string[] = [];
    const slow = startConsumer(edge.redis, edge.prefix, {
      claimIdleMs,
      handlers: {
        "*": async () => {
          runs++;
          running();
          await gate;
        },
      },
      onFinished: (e) => outcomes.push(e.outcome),
    });
    cleanups.push(() => slow.stop());
    expect((await edge.postSigned(sampleEvent())).status).toBe(200);
    await inHandler;
    // Another consumer, claiming entries idle past claimIdleMs every half of it, all along.
    let claimed = 0;
    const other = startConsumer(edge.redis, edge.prefix, { claimIdleMs, onClaimed: (n) => (claimed += n) });
    cleanups.push(() => other.stop());
    const { stream, group } = redisKeys(edge.prefix).ingest;
    const pendingEntry = async () => {
      const [[, owner, , deliveries]] = (await edge.redis.xpending(stream, group, "-", "+", 10)) as [[string, string, number, number]];
      return { owner, deliveries };
    };
    const held = await pendingEntry();
    // The entry was read before its handler began, so before readBy: without the heartbeat, its
    // idle time would be at least what passes on Redis's clock from here.
    const redisNow = async () => {
      const [s, us] = await edge.redis.time();
      return Number(s) * 1000 + Math.floor(Number(us) / 1000);
    };
    const readBy = await redisNow();
    await waitFor(async () => (await redisNow()) > readBy + claimIdleMs, { what: "the claim idle time to pass", timeoutMs: 20_000 });
    // A claim pass now, as any consumer's (XAUTOCLAIM past claimIdleMs), takes nothing: the
    // heartbeat kept the entry's idle time short.
    const [, taken] = (await edge.redis.xautoclaim(stream, group, "a-claimer", claimIdleMs, "0-0", "JUSTID")) as [string, string[]];
    expect({ taken, ...(await pendingEntry()), claimed }).toEqual({ taken: [], owner: held.owner, deliveries: 1, claimed: 0 });
    release();
    await streamDrained(edge.redis, edge.prefix);
    expect({ runs, claimed, outcomes }).toEqual({ runs: 1, claimed: 0, outcomes: ["completed"] });
    expect(await edge.queue.getJobCountByTypes("completed", "failed", "waiting", "active", "delayed")).toBe(0);
  });
});

describe("ingest stream: backpressure", () => {
  it("answers 503 with Retry-After past MAX_BACKLOG, keeps /readyz 200, shows the backlog, and accepts again once drained", async () => {
    const edge = await edgeFor({ MAX_BACKLOG: "3", ADMIN_TOKEN });
    const events = [sampleEvent(), sampleEvent(), sampleEvent()];
    for (const e of events) expect((await edge.postSigned(e)).status).toBe(200);
    const extra = sampleEvent();
    const refused = await edge.postSigned(extra);
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("backlog_full");
    // A redelivery adds nothing, so it is still answered.
    expect(await (await edge.postSigned(events[0]!)).json()).toMatchObject({ duplicate: true });
    expect((await fetch(`${edge.url}/readyz`)).status).toBe(200);
    const metrics = await (await fetch(`${edge.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
    expect(metrics).toMatch(/^svc_ingest_backlog_events 3$/m);
    expect(Number(/^svc_ingest_lag_seconds (\S+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(0);
    expect(metrics).toMatch(/svc_webhook_events_rejected_total\{reason="backlog_full"\} 1/);

    const consumer = startConsumer(edge.redis, edge.prefix);
    cleanups.push(() => consumer.stop());
    await streamDrained(edge.redis, edge.prefix);
    expect((await edge.postSigned(extra)).status).toBe(200);
  });
});

describe("ingest stream: graceful stop of the consumer", () => {
  it("leaves no timer of its own holding the process open once stopped (npm run dev exits on Ctrl-C)", async () => {
    const edge = await edgeFor();
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    const before = timers();
    const consumer = startConsumer(edge.redis, edge.prefix);
    await consumer.stop();
    // stop() raced the loop against a 3 s deadline timer: a ref'd one kept `npm run dev` alive 25 s.
    expect(timers()).toBeLessThanOrEqual(before);
  });

  it("leaves every event finished, still in the stream or moved into the events queue at the stop, none read and dropped", async () => {
    const edge = await edgeFor();
    const events = Array.from({ length: 600 }, () => sampleEvent());
    const statuses = await Promise.all(events.map(async (e) => (await edge.postSigned(e)).status));
    expect(new Set(statuses)).toEqual(new Set([200]));

    const finished = new Set<string>();
    let firstBatch!: () => void;
    const someFinished = new Promise<void>((r) => (firstBatch = r));
    const consumer = startConsumer(edge.redis, edge.prefix, {
      batchSize: 50,
      onFinished: (e) => {
        finished.add(e.id);
        firstBatch();
      },
    });
    await someFinished;
    await consumer.stop();

    const { stream, group } = redisKeys(edge.prefix).ingest;
    expect(((await edge.redis.xpending(stream, group)) as [number])[0]).toBe(0);
    // Unread entries stay in the stream; those read ahead and not started moved into the events queue.
    const unfinished = (await edge.stored()).map((e) => e.id);
    expect(unfinished.filter((id) => finished.has(id))).toEqual([]);
    expect(unfinished.length + finished.size).toBe(events.length);
    expect(finished.size).toBeGreaterThan(0);
  });
});
