import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { createMetrics, type Metrics } from "../../src/metrics/metrics.js";
import { createMinuteSampler, readMinuteSamples, SAMPLE_SLOTS } from "../../src/metrics/minute-samples.js";
import { redisKeys } from "../../src/redis/redis.js";

const MINUTE = 60_000;
const START = Date.parse("2026-11-25T10:00:00Z");

let conns: Redis[] = [];
let key: string;
beforeEach(() => {
  key = redisKeys(`test-${randomUUID().slice(0, 8)}`).minuteSamples;
});
afterEach(async () => {
  await conns[0]?.del(key);
  await Promise.all(conns.map((c) => c.quit()));
  conns = [];
});

/** A worker process: its own registry, its own connection, a clock the test moves. */
function worker(clock: { now: number }): { metrics: Metrics; sampler: ReturnType<typeof createMinuteSampler> } {
  const redis = new Redis(inject("redisUrl"));
  conns.push(redis);
  const metrics = createMetrics();
  const sampler = createMinuteSampler({ redis, key, metrics, logger: pino({ level: "silent" }), now: () => clock.now });
  return { metrics, sampler };
}

describe("the minute sampler on a real Redis", () => {
  it("adds the processes' counts of a minute together and keeps the largest gauge", async () => {
    const clock = { now: START + 5_000 };
    const a = worker(clock);
    const b = worker(clock);
    a.metrics.jobs.inc({ queue: "events", name: "order.created", outcome: "completed" }, 3);
    b.metrics.jobs.inc({ queue: "events", name: "order.created", outcome: "completed" }, 4);
    b.metrics.jobs.inc({ queue: "events", name: "order.created", outcome: "failed" });
    a.metrics.budgetSlots.inc({ class: "full" }, 7);
    a.metrics.streamBacklog.set(12);
    b.metrics.streamBacklog.set(30);
    await a.sampler.sampleOnce();
    await b.sampler.sampleOnce();
    // The next minute: a counts only what it counted since its last sample.
    clock.now += MINUTE;
    a.metrics.jobs.inc({ queue: "events", name: "order.created", outcome: "completed" }, 2);
    a.metrics.streamBacklog.set(5);
    await a.sampler.sampleOnce();

    const samples = await readMinuteSamples(conns[0]!, key, { now: clock.now });
    const minute = Math.floor(START / MINUTE);
    expect(samples.map((s) => s.minute)).toEqual([minute, minute + 1]);
    expect(samples[0]!.values).toMatchObject({ delivered: 7, failed: 1, "budget.full": 7, backlog: 30 });
    expect(samples[1]!.values).toMatchObject({ delivered: 2, failed: 0, "budget.full": 0, backlog: 5 });
  });

  it(`holds at most ${SAMPLE_SLOTS} minutes however long it runs, and reads back the last hour`, async () => {
    const clock = { now: START };
    const { metrics, sampler } = worker(clock);
    for (let i = 0; i < SAMPLE_SLOTS + 80; i++) {
      metrics.jobs.inc({ queue: "events", name: "order.created", outcome: "completed" }, i);
      await sampler.sampleOnce();
      clock.now += MINUTE;
    }
    expect(await conns[0]!.hlen(key)).toBe(SAMPLE_SLOTS);
    const lastHour = await readMinuteSamples(conns[0]!, key, { now: clock.now - MINUTE });
    expect(lastHour).toHaveLength(60);
    // The newest minute holds its own count, not a neighbour's from two hours before.
    expect(lastHour.at(-1)!.values.delivered).toBe(SAMPLE_SLOTS + 79);
  });

  it("keeps a newer minute when a process with a slow clock writes its slot", async () => {
    const ahead = { now: START + SAMPLE_SLOTS * MINUTE };
    const behind = { now: START };
    const a = worker(ahead);
    const b = worker(behind);
    a.metrics.streamBacklog.set(1);
    b.metrics.streamBacklog.set(99);
    await a.sampler.sampleOnce();
    await b.sampler.sampleOnce();
    const samples = await readMinuteSamples(conns[0]!, key, { now: ahead.now });
    expect(samples.map((s) => s.values.backlog)).toEqual([1]);
  });
});
