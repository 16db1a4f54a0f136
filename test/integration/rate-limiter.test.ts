import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { redisKeys } from "../../src/redis/redis.js";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { createApiClient } from "../../src/upstream/client.js";
import { apiKeyId } from "../../src/base/api-key.js";
import {
  createRateLimiter,
  LENT_SHARE,
  WEBHOOK_BURST,
  type BudgetClass,
  type RateLimiter,
  type RateLimiterOptions,
} from "../../src/upstream/rate-limiter.js";
import { createRefreshPace } from "../../src/sync/refresh-queue.js";
import { waitFor } from "../helpers/wait-for.js";

let conns: Redis[] = [];
let sandboxes: Sandbox[] = [];
let prefix: string;
beforeEach(() => {
  prefix = `test-${randomUUID().slice(0, 8)}`;
});
afterEach(async () => {
  await Promise.all(sandboxes.map((s) => s.close()));
  sandboxes = [];
  await Promise.all(conns.map((c) => c.quit()));
  conns = [];
});

/** A limiter on its own Redis connection, as another process would have. */
function limiter(opts: Omit<RateLimiterOptions, "redis" | "keyId">): RateLimiter {
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

/** Callers of one class taking slots until `stop` aborts; each slot's Redis time lands in `times`. */
function saturate(l: RateLimiter, priority: BudgetClass, callers: number, stop: AbortSignal, times: number[]): Promise<void> {
  const caller = async () => {
    while (!stop.aborted) times.push(await l.acquire({ priority, signal: stop }));
  };
  return Promise.all(Array.from({ length: callers }, caller)).then(
    () => undefined,
    (err: unknown) => {
      if (!stop.aborted) throw err;
    },
  );
}

// max 20 per 2 s window: one slot every 100 ms.
const SMALL = { max: 20, windowMs: 2000 };

/** Half of SMALL's window spent just now, so the pace binds: an emptier window lends its callers slots at once. */
async function spendHalfTheWindow(): Promise<void> {
  const now = await redisNow();
  const spent = Array.from({ length: SMALL.max / 2 }, (_, i) => [now - 1 - i, `spent-${i}`] as const);
  await conns[0]!.zadd(redisKeys(prefix).upstreamBudget("k1").log, ...spent.flat());
}

describe("shared rate limiter: strict priority, paced, work-conserving", () => {
  it("gives a lone full-class caller the whole budget: paced, never over max, and the window's last slot too", async () => {
    const a = limiter(SMALL);
    const times: number[] = [];
    for (let i = 0; i < 2 * SMALL.max; i++) times.push(await a.acquire({ priority: "full" }));
    expect(maxInAnyWindow(times, SMALL.windowMs)).toBeLessThanOrEqual(SMALL.max);
    // Nothing above it wants the budget, so it is not held to a share: with max - 1 slots of the
    // window spent and the pace due, it takes the last one at once.
    const b = limiter({ ...SMALL, prefix: `${prefix}-b` });
    const keys = redisKeys(`${prefix}-b`).upstreamBudget("k1");
    const now = await redisNow();
    const spent = Array.from({ length: SMALL.max - 1 }, (_, i) => [now - 1 - i, `spent-${i}`] as const);
    await conns[0]!.zadd(keys.log, ...spent.flat());
    await conns[0]!.zadd(keys.fullLog, ...spent.flat());
    await b.acquire({ priority: "full" });
    expect(await conns[0]!.zcard(keys.log)).toBe(SMALL.max);
  });

  it("serves a webhook caller next while full-class callers saturate the budget", async () => {
    const a = limiter(SMALL);
    await spendHalfTheWindow();
    const stop = new AbortController();
    const full: number[] = [];
    const fullCallers = saturate(a, "full", 3, stop.signal, full);
    await waitFor(() => full.length >= 3, { what: "the full class taking slots" });
    const { webhookWaiters } = redisKeys(prefix).upstreamBudget("k1");
    let waited = 0;
    // More than the webhook class's burst: the later ones wait for the pace like everyone.
    for (let i = 0; i < WEBHOOK_BURST + 4; i++) {
      let served = false;
      const granted = a.acquire({ priority: "webhook" }).finally(() => (served = true));
      // Served at once, or refused and registered as waiting: from then on no full slot goes
      // before it (in the same ms as the look at most, hence the look's time after it).
      const waitingSince = await waitFor(async () => served || ((await conns[0]!.zcard(webhookWaiters)) > 0 && redisNow()), {
        what: "the webhook caller served or waiting",
      });
      const grantedAt = await granted;
      if (waitingSince === true) continue;
      waited++;
      expect(full.filter((t) => t > waitingSince && t < grantedAt)).toEqual([]);
    }
    expect(waited).toBeGreaterThan(0);
    stop.abort();
    await fullCallers;
  });

  it("holds a lower class back while a higher class of another process waits for a slot", async () => {
    const [fullProcess, activeProcess, webhookProcess] = [limiter(SMALL), limiter(SMALL), limiter(SMALL)];
    await spendHalfTheWindow();
    // A pause makes all three wait for the same moment; the lowest class asks first.
    await fullProcess.pause(300);
    const full = fullProcess.acquire({ priority: "full" });
    const active = activeProcess.acquire({ priority: "active" });
    const webhook = webhookProcess.acquire({ priority: "webhook" });
    const [f, a, w] = await Promise.all([full, active, webhook]);
    expect(w).toBeLessThan(a);
    expect(a).toBeLessThan(f);
  });

  it("lets the lower class go once the waiting caller above it gives up", async () => {
    const [fullProcess, activeProcess] = [limiter(SMALL), limiter(SMALL)];
    await fullProcess.pause(60_000);
    const gaveUp = new AbortController();
    const active = activeProcess.acquire({ priority: "active", signal: gaveUp.signal });
    // Refused during the pause, the active caller is registered as waiting (until the pause's end).
    const keys = redisKeys(prefix).upstreamBudget("k1");
    await waitFor(async () => (await conns[0]!.zcard(keys.activeWaiters)) === 1, { what: "the active caller waiting" });
    gaveUp.abort(new Error("gave up"));
    await expect(active).rejects.toThrow("gave up");
    expect(await conns[0]!.zcard(keys.activeWaiters)).toBe(0);
    // Were it still registered, the full class would wait out the whole minute.
    await conns[0]!.del(keys.pause);
    expect(await fullProcess.acquire({ priority: "full" })).toBeGreaterThan(0);
  });

  it("keeps a caller late by up to a whole interval in its place in the pace; after an idle spell, lends or starts afresh", async () => {
    // 60 a minute: one slot a second. The next paced slot's due time is set back as if the
    // caller came that late (a loaded host's timers, a page's write before its next read).
    const l = limiter({ max: 60, windowMs: 60_000 });
    const keys = redisKeys(prefix).upstreamBudget("k1");
    const dueAfter = async (lateMs: number, priority: BudgetClass = "active") => {
      await conns[0]!.set(keys.next, String((await redisNow()) - lateMs));
      const dueBefore = Number(await conns[0]!.get(keys.next));
      const takenAt = await l.acquire({ priority });
      return { dueBefore, takenAt, dueNext: Number(await conns[0]!.get(keys.next)) };
    };
    // Late by 900 ms: the next slot stays due one interval after this one was, not after it was taken.
    const late = await dueAfter(900);
    expect(late.dueNext).toBe(late.dueBefore + 1000);
    expect(late.dueNext - late.takenAt).toBeLessThan(1000);
    expect(await conns[0]!.zcard(keys.lentLog)).toBe(0);
    // Idle for 5 intervals with the window nearly empty: a full-class caller (a backfill, reading
    // for minutes) is lent nothing, the pace starts afresh; the active tier (a catch-up) is lent, the
    // pace stays where it was.
    const full = await dueAfter(5000, "full");
    expect(full.dueNext).toBe(full.takenAt + 1000);
    expect(await conns[0]!.zcard(keys.lentLog)).toBe(0);
    const lent = await dueAfter(5000);
    expect(lent.dueNext).toBe(lent.dueBefore + 1000);
    expect(await conns[0]!.zcard(keys.lentLog)).toBe(1);
    // Idle with more than a quarter of the window spent: nothing to lend, the pace starts afresh.
    await conns[0]!.del(keys.lentLog);
    const now = await redisNow();
    const spent = Array.from({ length: 30 }, (_, i) => [now - 10 - i, `spent-${i}`] as const);
    await conns[0]!.zadd(keys.log, ...spent.flat());
    const idle = await dueAfter(5000);
    expect(idle.dueNext).toBe(idle.takenAt + 1000);
    expect(await conns[0]!.zcard(keys.lentLog)).toBe(0);
  });

  it("lends an idle budget's first slots ahead of the pace, up to LENT_SHARE of the window", async () => {
    // SMALL: one slot per 100 ms; an empty window lends up to 5.
    const lendable = Math.floor(SMALL.max * LENT_SHARE);
    const l = limiter(SMALL);
    const keys = redisKeys(prefix).upstreamBudget("k1");
    const taken: number[] = [];
    for (let i = 0; i < lendable - 1; i++) {
      taken.push(await l.acquire({ priority: "active" }));
      // Each left the next slot due at once (at the latest when it was taken): no wait for the pace.
      expect(Number(await conns[0]!.get(keys.next))).toBeLessThanOrEqual(taken.at(-1)!);
    }
    expect(await conns[0]!.zcard(keys.lentLog)).toBe(lendable - 1);
    // Lending stops once the window holds LENT_SHARE of it; the ceiling holds through it all.
    for (let i = 0; i < SMALL.max; i++) taken.push(await l.acquire({ priority: "active" }));
    expect(await conns[0]!.zcard(keys.lentLog)).toBeLessThanOrEqual(lendable);
    expect(maxInAnyWindow(taken, SMALL.windowMs)).toBeLessThanOrEqual(SMALL.max);
  });

  it("has the pace pay lent slots back: the window's slots left are spread until the oldest lent one leaves", async () => {
    const l = limiter(SMALL);
    const keys = redisKeys(prefix).upstreamBudget("k1");
    const nextAfterOne = async () => {
      const before = await redisNow();
      await conns[0]!.set(keys.next, String(before - 50));
      await l.acquire({ priority: "full" });
      return { before, after: await redisNow(), paced: Number(await conns[0]!.get(keys.next)) - (before - 50) };
    };
    const now = await redisNow();
    const lent = Array.from({ length: 4 }, (_, i) => [now - 1 - i, `lent-${i}`] as const);
    await conns[0]!.zadd(keys.log, ...lent.flat());
    await conns[0]!.zadd(keys.lentLog, ...lent.flat());
    // 16 slots left of 20, spread over the ~2 s until the oldest lent slot (now - 4) leaves.
    const spread = await nextAfterOne();
    const until = (t: number) => Math.ceil((now - 4 + SMALL.windowMs - t) / (SMALL.max - 4));
    expect(spread.paced).toBeGreaterThanOrEqual(until(spread.after));
    expect(spread.paced).toBeLessThanOrEqual(until(spread.before));
    expect(spread.paced).toBeGreaterThan(SMALL.windowMs / SMALL.max);
    // None lent: one per interval (2000 ÷ 20).
    await conns[0]!.del(keys.lentLog);
    expect((await nextAfterOne()).paced).toBe(SMALL.windowMs / SMALL.max);
  });

  it("never puts more than max into the API's window, every class at once (no 429 from the sandbox)", async () => {
    const sandbox = createSandbox({ rateLimit: { max: 20, windowMs: 1000 } });
    sandboxes.push(sandbox);
    const baseUrl = await sandbox.listen();
    // One host, one clock: the margin is not needed for lateness (a slot counts from its answer), kept as deployed.
    const rate = { max: 20, windowMs: 1000, safetyMs: 500 };
    const client = () => {
      const redis = new Redis(inject("redisUrl"));
      conns.push(redis);
      const limiter = createRateLimiter({ redis, keyId: apiKeyId(sandbox.apiKey), prefix, ...rate });
      return createApiClient({ baseUrl, apiKey: sandbox.apiKey, limiter, retryBaseMs: 10 });
    };
    const [a, b] = [client(), client()];
    const classes: BudgetClass[] = ["webhook", "active", "full"];
    await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).listMenuItems({ limit: 1 }, { priority: classes[i % 3]! })));
    const log = sandbox.requestLog;
    expect(log).toHaveLength(40);
    expect(log.filter((r) => r.status === 429)).toHaveLength(0);
    expect(
      maxInAnyWindow(
        log.map((r) => r.at),
        1000,
      ),
    ).toBeLessThanOrEqual(20);
  });

  it("makes every class of every process wait out a pause set by one of them", async () => {
    const a = limiter({ max: 100, windowMs: 1000 });
    const b = limiter({ max: 100, windowMs: 1000 });
    const pausedAt = await redisNow();
    await a.pause(300);
    const granted = await Promise.all((["webhook", "active", "full"] as const).map((priority) => b.acquire({ priority })));
    for (const at of granted) expect(at - pausedAt).toBeGreaterThanOrEqual(300);
  });

  it("only ever extends a pause", async () => {
    const a = limiter({ max: 10, windowMs: 1000 });
    await a.pause(60_000);
    await a.pause(100);
    // Far above the 100 ms asked last, and above anything this test's run could take off the minute.
    expect((await a.state()).pausedForMs).toBeGreaterThan(30_000);
  });

  it("tells the window's slots by class and the rate each class spends at now", async () => {
    const a = limiter({ max: 1000, windowMs: 60_000 });
    for (const priority of ["webhook", "full", "full", "active", "full"] as const) await a.acquire({ priority });
    // Five slots in the last 15 s of a 60 s window: ×4 for the rate a window.
    expect(await a.state()).toMatchObject({
      inWindow: 5,
      byClass: { webhook: 1, active: 1, full: 3 },
      recentPerWindowByClass: { webhook: 4, active: 4, full: 12 },
    });
  });

  it("keeps refreshes from waiting on a backfill: their pace reads the webhook class's rate only", async () => {
    const a = limiter({ max: 100, windowMs: 1000 });
    for (let i = 0; i < 50; i++) await a.acquire({ priority: "full" });
    await a.acquire({ priority: "webhook" });
    const state = await a.state();
    // The budget is busy (about half of it a window), all but one slot the full class's.
    expect(state.recentPerWindowByClass.full).toBeGreaterThan(state.recentPerWindowByClass.webhook);
    const pace = createRefreshPace({ state: () => a.state(), share: 0.75, maxWaitMs: 40 });
    expect(await pace()).toBe(0);
  });

  it("counts a slot from its request's answer once told, in every log that holds it", async () => {
    const l = limiter({ max: 10, windowMs: 60_000 });
    const keys = redisKeys(prefix).upstreamBudget("k1");
    const slot = await l.acquireSlot({ priority: "full" });
    // The answer comes later on Redis's clock than the slot (a ms is enough to tell them apart).
    const answeredAfter = await waitFor(async () => {
      const now = await redisNow();
      return now > slot.at && now;
    });
    slot.answered();
    const scores = async (key: string) => (await conns[0]!.zrange(key, "0", "-1", "WITHSCORES")).filter((_, i) => i % 2 === 1).map(Number);
    await waitFor(async () => (await scores(keys.log))[0]! >= answeredAfter, { what: "the slot re-dated at its answer" });
    expect(await scores(keys.fullLog)).toEqual(await scores(keys.log));
    expect(await conns[0]!.pttl(keys.log)).toBeGreaterThan(0);
  });

  it("tells who took each slot (per-class metrics)", async () => {
    const taken: BudgetClass[] = [];
    const l = limiter({ max: 100, windowMs: 1000, onSlot: ({ budget }) => taken.push(budget) });
    await l.acquire({ priority: "full" });
    await l.acquire();
    await l.acquire({ priority: "active" });
    expect(taken).toEqual(["full", "webhook", "active"]);
  });
});
