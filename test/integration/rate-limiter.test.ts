import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { createRateLimiter, type RateLimiter } from "../../src/upstream/rate-limiter.js";

let conns: Redis[] = [];
let prefix: string;
beforeEach(() => {
  prefix = `test-${randomUUID().slice(0, 8)}`;
});
afterEach(async () => {
  await Promise.all(conns.map((c) => c.quit()));
  conns = [];
});

/** A limiter on its own Redis connection, as another process would have. */
function limiter(opts: { max: number; windowMs: number; safetyMs?: number; lowPriorityShare?: number }): RateLimiter {
  const redis = new Redis(inject("redisUrl"));
  conns.push(redis);
  return createRateLimiter({ redis, keyId: "k1", prefix, safetyMs: 0, ...opts });
}

/** Redis's clock in ms: the limiter's own clock, so recorded times compare with its windows. */
async function redisNow(): Promise<number> {
  const [s, us] = await conns[0]!.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

function maxInAnyWindow(times: number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[i]! - sorted[j]! >= windowMs) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
}

describe("shared rate limiter", () => {
  it("keeps two processes sharing a key under max per window, spread by the minimum gap", async () => {
    const a = limiter({ max: 5, windowMs: 500 });
    const b = limiter({ max: 5, windowMs: 500 });
    const times: number[] = [];
    await Promise.all(Array.from({ length: 15 }, (_, i) => (i % 2 ? a : b).acquire().then((grantedAt) => times.push(grantedAt))));
    expect(times).toHaveLength(15);
    expect(maxInAnyWindow(times, 500)).toBeLessThanOrEqual(5);
    const sorted = times.sort((x, y) => x - y);
    // minimum gap = window / max / 2 = 50 ms
    const gaps = sorted.slice(1).map((t, i) => t - sorted[i]!);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(50);
  });

  it("makes every process wait out a pause set by one of them", async () => {
    const a = limiter({ max: 100, windowMs: 1000 });
    const b = limiter({ max: 100, windowMs: 1000 });
    const pausedAt = await redisNow();
    await a.pause(300);
    expect((await b.acquire()) - pausedAt).toBeGreaterThanOrEqual(300);
  });

  it("only ever extends a pause", async () => {
    const a = limiter({ max: 10, windowMs: 1000 });
    await a.pause(5000);
    await a.pause(100);
    expect((await a.state()).pausedForMs).toBeGreaterThan(4000);
  });

  it("keeps the last share of the window for high priority", async () => {
    const a = limiter({ max: 4, windowMs: 60_000, lowPriorityShare: 0.5 });
    await a.acquire({ priority: "low" });
    await a.acquire({ priority: "low" });
    const aborted = new AbortController();
    const low = a.acquire({ priority: "low", signal: aborted.signal });
    await a.acquire({ priority: "high" });
    expect((await a.state()).inWindow).toBe(3);
    aborted.abort();
    await expect(low).rejects.toBeDefined();
  });
});
