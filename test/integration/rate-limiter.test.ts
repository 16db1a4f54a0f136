import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { createRateLimiter, type BudgetClass, type RateLimiter } from "../../src/upstream/rate-limiter.js";

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
function limiter(opts: {
  max: number;
  windowMs: number;
  safetyMs?: number;
  activeShare?: number;
  fullShare?: number;
  webhookPaceShare?: number;
  spreadLowerClasses?: boolean;
}): RateLimiter {
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
    // minimum gap = window / max / 4 = 25 ms
    const gaps = sorted.slice(1).map((t, i) => t - sorted[i]!);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(25);
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

  it("keeps the rest of the window for webhooks once the full class holds its share", async () => {
    const a = limiter({ max: 4, windowMs: 60_000, fullShare: 0.5, spreadLowerClasses: false });
    await a.acquire({ priority: "full" });
    await a.acquire({ priority: "full" });
    const aborted = new AbortController();
    const full = a.acquire({ priority: "full", signal: aborted.signal });
    await a.acquire({ priority: "webhook" });
    expect((await a.state()).inWindow).toBe(3);
    aborted.abort();
    await expect(full).rejects.toBeDefined();
  });

  it("serves the classes in order: full stops at its cap, active at its own, webhook takes the whole window", async () => {
    // A window long enough that nothing leaves it during the test (the minimum gap is window / max / 4 = 0.5 s).
    const a = limiter({ max: 8, windowMs: 16_000, activeShare: 0.5, fullShare: 0.25, spreadLowerClasses: false });
    expect(a.caps).toEqual({ webhook: 8, active: 4, full: 2 });
    await a.acquire({ priority: "full" });
    await a.acquire({ priority: "full" });
    const stopFull = new AbortController();
    const full = a.acquire({ priority: "full", signal: stopFull.signal });
    await a.acquire({ priority: "active" });
    await a.acquire({ priority: "active" });
    const stopActive = new AbortController();
    const active = a.acquire({ priority: "active", signal: stopActive.signal });
    for (let i = 0; i < 4; i++) await a.acquire({ priority: "webhook" });
    expect((await a.state()).inWindow).toBe(8);
    stopFull.abort();
    stopActive.abort();
    await expect(full).rejects.toBeDefined();
    await expect(active).rejects.toBeDefined();
  });

  it("never lets the full class hold more than its share of any window while webhooks and the active tier still get slots", async () => {
    const windowMs = 1000;
    const slots: Record<BudgetClass, number> = { webhook: 0, active: 0, full: 0 };
    const a = limiter({
      max: 20,
      windowMs,
      activeShare: 0.5,
      fullShare: 0.25,
    });
    const b = limiter({ max: 20, windowMs, activeShare: 0.5, fullShare: 0.25 });
    const times: Record<BudgetClass, number[]> = { webhook: [], active: [], full: [] };
    // Two processes, each class asking for more than its share, all at once.
    const ask = (l: RateLimiter, budget: BudgetClass, n: number) =>
      (async () => {
        for (let i = 0; i < n; i++) {
          times[budget].push(await l.acquire({ priority: budget }));
          slots[budget]++;
        }
      })();
    await Promise.all([
      ask(a, "full", 6),
      ask(b, "full", 6),
      ask(a, "active", 6),
      ask(b, "active", 6),
      ask(a, "webhook", 6),
      ask(b, "webhook", 6),
    ]);
    expect(slots).toEqual({ webhook: 12, active: 12, full: 12 });
    // By Redis's clock, the limiter's own: at most 5 (a quarter of 20) full slots in any window.
    expect(maxInAnyWindow(times.full, windowMs)).toBeLessThanOrEqual(5);
    expect(maxInAnyWindow([...times.full, ...times.active], windowMs)).toBeLessThanOrEqual(10);
    expect(maxInAnyWindow([...times.full, ...times.active, ...times.webhook], windowMs)).toBeLessThanOrEqual(20);
  });

  it("gives the full class its share of what webhooks leave, and never the reserve kept for them", async () => {
    // max 20: the lower classes never take the window's last 5 slots (25 %); full holds at most 5.
    // A window long enough that nothing leaves it during the test (the minimum gap is 200 ms).
    const a = limiter({ max: 20, windowMs: 16_000, activeShare: 0.5, fullShare: 0.25, spreadLowerClasses: false });
    for (let i = 0; i < 8; i++) await a.acquire({ priority: "webhook" });
    // 8 of the window are webhooks': the full class still gets its whole share (5 of 20).
    for (let i = 0; i < 5; i++) await a.acquire({ priority: "full" });
    const stopFull = new AbortController();
    const sixth = a.acquire({ priority: "full", signal: stopFull.signal });
    // The active class: up to the reserve (15 in the window), well short of its share with the full slots (10).
    for (let i = 0; i < 2; i++) await a.acquire({ priority: "active" });
    const stopActive = new AbortController();
    const reserved = a.acquire({ priority: "active", signal: stopActive.signal });
    // 15 in the window: the last 5 are webhooks' alone.
    for (let i = 0; i < 5; i++) await a.acquire({ priority: "webhook" });
    expect(await a.state()).toMatchObject({ inWindow: 20, byClass: { webhook: 13, active: 2, full: 5 } });
    stopFull.abort();
    stopActive.abort();
    await expect(sixth).rejects.toBeDefined();
    await expect(reserved).rejects.toBeDefined();
  });

  it("keeps a quarter of the window from the active class and a tenth from the full class", async () => {
    const a = limiter({ max: 20, windowMs: 16_000, activeShare: 0.5, fullShare: 0.25, spreadLowerClasses: false });
    for (let i = 0; i < 15; i++) await a.acquire({ priority: "webhook" });
    const stopActive = new AbortController();
    const active = a.acquire({ priority: "active", signal: stopActive.signal });
    // The full class still goes on, up to the window's last tenth (18 of 20).
    for (let i = 0; i < 3; i++) await a.acquire({ priority: "full" });
    const stopFull = new AbortController();
    const full = a.acquire({ priority: "full", signal: stopFull.signal });
    for (let i = 0; i < 2; i++) await a.acquire({ priority: "webhook" });
    expect(await a.state()).toMatchObject({ inWindow: 20, byClass: { webhook: 17, active: 0, full: 3 } });
    stopActive.abort();
    stopFull.abort();
    await expect(active).rejects.toBeDefined();
    await expect(full).rejects.toBeDefined();
  });

  it("lets webhook slots go in a burst, then at the rate their paced share sustains (a cell rate)", async () => {
    // Paced share 0.25 of 20 per 2 s window: one slot per 400 ms, after a burst of 13 (the full
    // class's limit, 18, less those 5): never more than 13 + t / 400 ms slots by time t.
    const a = limiter({ max: 20, windowMs: 2000, webhookPaceShare: 0.25 });
    const times: number[] = [];
    for (let i = 0; i < 16; i++) times.push(await a.acquire({ priority: "webhook" }));
    // The burst is not spaced at the rate (a slot past the 5th per 400 ms would take 3.2 s): one window holds it…
    expect(times[12]! - times[0]!).toBeLessThan(2000);
    // …and what follows is.
    for (let i = 13; i < 16; i++) expect(times[i]! - times[0]!).toBeGreaterThanOrEqual((i - 12) * 400);
  });

  it("spreads a lower class at the rate its share sustains, never in a burst", async () => {
    // Full share 0.25 of 20 per 2 s window: 5 slots, one per 400 ms at most.
    const a = limiter({ max: 20, windowMs: 2000, fullShare: 0.25 });
    const times: number[] = [];
    for (let i = 0; i < 4; i++) times.push(await a.acquire({ priority: "full" }));
    for (let i = 1; i < 4; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(400);
  });

  it("tells the window's slots by class and the rate they are spent at now", async () => {
    const a = limiter({ max: 100, windowMs: 60_000, webhookPaceShare: 1, spreadLowerClasses: false });
    for (const priority of ["webhook", "webhook", "active", "full"] as const) await a.acquire({ priority });
    // Four slots in the last 15 s: 16 a window at this rate.
    expect(await a.state()).toMatchObject({ inWindow: 4, byClass: { webhook: 2, active: 1, full: 1 }, recentPerWindow: 16 });
  });

  it("tells who took each slot (per-class metrics)", async () => {
    const taken: BudgetClass[] = [];
    const redis = new Redis(inject("redisUrl"));
    conns.push(redis);
    const l = createRateLimiter({
      redis,
      keyId: "k1",
      prefix,
      max: 100,
      windowMs: 1000,
      safetyMs: 0,
      onSlot: ({ budget }) => taken.push(budget),
    });
    await l.acquire({ priority: "full" });
    await l.acquire();
    await l.acquire({ priority: "active" });
    expect(taken).toEqual(["full", "webhook", "active"]);
  });

  it("refuses a share outside (0, 1]", () => {
    expect(() => limiter({ max: 10, windowMs: 1000, fullShare: 0 })).toThrow(/full share/);
    expect(() => limiter({ max: 10, windowMs: 1000, activeShare: 1.5 })).toThrow(/active share/);
  });
});
