import { afterEach, describe, expect, it } from "vitest";
import { createHandlerRegistry } from "../../src/events/dispatch.js";
import { createLogger } from "../../src/logging/logger.js";
import { createAttemptRunner } from "../../src/queue/attempt-runner.js";
import { createEventWorker } from "../../src/queue/events-queue.js";
import { redisKeys } from "../../src/redis/redis.js";
import { sampleEvent, startEdge } from "../helpers/edge.js";
import { startConsumer, streamDrained } from "../helpers/stream-consumer.js";
import { waitFor } from "../helpers/wait-for.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
const never = () => new Promise<never>(() => undefined);

describe("stream consumer: a handler that never returns holds one slot, not the stream", () => {
  it("handles all 50 events posted after one whose '*' handler never returns (no deadline)", async () => {
    const edge = await startEdge();
    cleanups.push(() => edge.stop());
    const hung = sampleEvent();
    const handled = new Set<string>();
    let hungStarted!: () => void;
    const inHungHandler = new Promise<void>((r) => (hungStarted = r));
    const consumed = startConsumer(edge.redis, edge.prefix, {
      handlerTimeoutMs: 0,
      handlers: {
        "*": async (e: { id: string }) => {
          if (e.id !== hung.id) return;
          hungStarted();
          await never();
        },
      },
      onFinished: (e) => {
        if (e.outcome === "completed") handled.add(e.id);
      },
    });
    cleanups.push(() => consumed.stop());
    expect((await edge.postSigned(hung)).status).toBe(200);
    await inHungHandler;
    const after = Array.from({ length: 50 }, () => sampleEvent());
    for (const e of after) expect((await edge.postSigned(e)).status).toBe(200);
    await waitFor(() => after.every((e) => handled.has(e.id)), { what: "every event after the hung one to be handled" });
    expect(handled.has(hung.id)).toBe(false);
    // Only the hung entry is still held (and kept claimed), the rest acknowledged and deleted.
    expect(consumed.consumer.inflight().entries).toBe(1);
    expect(await edge.redis.xlen(redisKeys(edge.prefix).ingest.stream)).toBe(1);
  });
});

describe("stream consumer: bytes in flight", () => {
  it("holds no more than WORKER_MAX_INFLIGHT_BYTES of ~1 MB events at once, and handles them and a small one behind them", async () => {
    const edge = await startEdge();
    cleanups.push(() => edge.stop());
    const budget = 4 * 1024 * 1024;
    const big = Array.from({ length: 12 }, () => sampleEvent({ type: "loyalty.points_awarded", data: { blob: "x".repeat(1_000_000) } }));
    const small = sampleEvent({ type: "loyalty.points_awarded" });
    for (const e of [...big, small]) expect((await edge.postSigned(e)).status).toBe(200);
    const { stream, group } = redisKeys(edge.prefix).ingest;
    // What the consumer holds, as Redis sees it: entries read and not yet acknowledged.
    let mostPending = 0;
    const handled = new Set<string>();
    const consumed = startConsumer(edge.redis, edge.prefix, {
      maxInflightBytes: budget,
      handlers: {
        "*": async () => {
          const [pending] = (await edge.redis.xpending(stream, group)) as [number];
          mostPending = Math.max(mostPending, pending);
        },
      },
      onFinished: (e) => handled.add(e.id),
    });
    cleanups.push(() => consumed.stop());
    await waitFor(() => handled.size === big.length + 1, { what: "every event to be finished" });
    expect(handled).toEqual(new Set([...big, small].map((e) => e.id)));
    const entryBytes = JSON.stringify(big[0]).length;
    expect(mostPending * entryBytes).toBeLessThanOrEqual(budget);
    expect(consumed.consumer.inflight().peakBytes).toBeLessThanOrEqual(budget);
    expect(consumed.consumer.inflight()).toMatchObject({ entries: 0, bytes: 0 });
  });

  it("still runs a single event larger than the whole budget", async () => {
    const edge = await startEdge();
    cleanups.push(() => edge.stop());
    const event = sampleEvent({ type: "loyalty.points_awarded", data: { blob: "y".repeat(100_000) } });
    expect((await edge.postSigned(event)).status).toBe(200);
    const handled: string[] = [];
    const consumed = startConsumer(edge.redis, edge.prefix, { maxInflightBytes: 1024, onFinished: (e) => handled.push(e.id) });
    cleanups.push(() => consumed.stop());
    await waitFor(() => handled.length > 0, { what: "the event to be finished" });
    expect(handled).toEqual([event.id]);
    await streamDrained(edge.redis, edge.prefix);
  });
});

describe("stream consumer: stopping", () => {
  it("starts no handler once stop() is called, and hands the 38 entries it read ahead to the events queue at once", async () => {
    const edge = await startEdge();
    cleanups.push(() => edge.stop());
    const events = Array.from({ length: 40 }, () => sampleEvent({ type: "loyalty.points_awarded" }));
    for (const e of events) expect((await edge.postSigned(e)).status).toBe(200);
    const startedHere: string[] = [];
    let stopCalled = false;
    let startedAfterStop = 0;
    let openGate!: () => void;
    const gate = new Promise<void>((r) => (openGate = r));
    const stopping = startConsumer(edge.redis, edge.prefix, {
      concurrency: 2,
      handlers: {
        "*": async (e: { id: string }) => {
          startedHere.push(e.id);
          if (stopCalled) startedAfterStop++;
          await gate;
        },
      },
    });
    await waitFor(() => startedHere.length === 2 && stopping.consumer.inflight().entries === 40, {
      what: "two slow handlers running and all 40 entries read ahead",
    });
    stopCalled = true;
    const stopped = stopping.stop();
    // The two running handlers end; the other 38 never start here.
    openGate();
    await stopped;
    expect(startedAfterStop).toBe(0);
    // Another worker's events-queue worker takes the rest right away (no claim after claimIdleMs).
    const handledElsewhere: string[] = [];
    const registry = createHandlerRegistry<object>();
    registry.on("*", (e: { id: string }) => void handledElsewhere.push(e.id), "test");
    const connection = edge.redis.duplicate({ maxRetriesPerRequest: null });
    const logger = createLogger({ level: "silent" });
    const runner = createAttemptRunner<object>({ registry, logger, makeContext: () => ({}) });
    const worker = createEventWorker({ connection, prefix: edge.prefix, runner, concurrency: 5, logger });
    cleanups.push(async () => {
      await worker.close();
      await connection.quit();
    });
    void worker.run();
    await waitFor(() => handledElsewhere.length >= 38, { what: "the entries read ahead to be handled by another worker" });
    await streamDrained(edge.redis, edge.prefix);
    expect(startedHere).toHaveLength(2);
    // Every entry handled exactly once overall, none lost.
    const all = [...startedHere, ...handledElsewhere];
    expect(all).toHaveLength(40);
    expect(new Set(all)).toEqual(new Set(events.map((e) => e.id)));
  });
});
