import { DEFAULTS } from "../config/defaults.js";
import { randomUUID } from "node:crypto";
import type { Cluster, Redis } from "ioredis";
import { defineScripts } from "../redis/define-scripts.js";
import { redisKeys } from "../redis/keys.js";
import { sleep } from "./sleep.js";

// Each decision is one Lua script, so it is atomic across every process sharing the key, and
// reads Redis's clock (TIME) so processes on hosts with different clocks still agree.

/**
 * Take one slot, or say how long to wait.
 * KEYS: log (sorted set of every class's acquisition times), pause, last (time of the latest
 *       acquisition), active log, full log (each lower class's own acquisitions), the webhook
 *       class's theoretical arrival time (its cell-rate state).
 * ARGV: limit (max for webhook; less each lower class's reserve for it), window (ms, safety margin
 *       included), minimum gap (ms), a unique member, class, class cap (its share of max),
 *       the webhook class's burst (slots) and its emission interval (ms: the rate of its paced
 *       share; 0 for none), a lower class's own gap (ms: the rate that holds its share, so it
 *       never takes its share in a burst), the active cap (which the full class's slots count
 *       toward too).
 * A lower class's cap counts its own slots and those of the classes below it (active: active and
 * full; full: full), so it holds at most its share, of what the classes above leave.
 * Returns { 1, now } when the slot was taken, { 0, waitMs } otherwise.
 */
const ACQUIRE = `
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local paused = redis.call("PTTL", KEYS[2])
if paused > 0 then return { 0, paused } end
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local gap = tonumber(ARGV[3])
local class = ARGV[5]
local cap = tonumber(ARGV[6])
for _, log in ipairs({ KEYS[1], KEYS[4], KEYS[5] }) do redis.call("ZREMRANGEBYSCORE", log, "-inf", now - window) end
-- Under n again once the (count - n + 1) oldest entries of the log have left the window.
local function waitFor(log, count, n)
  local oldest = redis.call("ZRANGE", log, count - n, count - n, "WITHSCORES")
  return math.max(1, tonumber(oldest[2]) + window - now)
end
local count = redis.call("ZCARD", KEYS[1])
if count >= limit then return { 0, waitFor(KEYS[1], count, limit) } end
-- A lower class is spread at the rate its share sustains, after its own newest slot.
local function ownGap(log)
  local newest = redis.call("ZRANGE", log, -1, -1, "WITHSCORES")
  local due = tonumber(newest[2] or "0") + tonumber(ARGV[9])
  if now < due then return due - now end
  return 0
end
if class == "full" then
  local own = redis.call("ZCARD", KEYS[5])
  if own >= cap then return { 0, waitFor(KEYS[5], own, cap) } end
end
if class ~= "webhook" then
  -- Both lower classes together stay under the active cap. Two logs: wait for the older of
  -- their oldest entries, then ask again.
  if redis.call("ZCARD", KEYS[4]) + redis.call("ZCARD", KEYS[5]) >= tonumber(ARGV[10]) then
    local a = redis.call("ZRANGE", KEYS[4], 0, 0, "WITHSCORES")
    local f = redis.call("ZRANGE", KEYS[5], 0, 0, "WITHSCORES")
    return { 0, math.max(1, math.min(tonumber(a[2] or now), tonumber(f[2] or now)) + window - now) }
  end
  local wait = ownGap(class == "active" and KEYS[4] or KEYS[5])
  if wait > 0 then return { 0, wait } end
end
-- The webhook class is a cell rate (GCRA): a burst of ARGV[7] slots, then one per ARGV[8] ms,
-- the rate of its paced share; time it leaves unused earns the burst back. So a window never
-- holds more than burst + window / interval of its slots: it cannot fill in a burst and block
-- everyone until its oldest slots leave (tens of seconds), and a refresh's few reads after a
-- quiet moment go at once instead of one per interval.
local interval = class == "webhook" and tonumber(ARGV[8]) or 0
local tat = now
if interval > 0 then tat = math.max(now, tonumber(redis.call("GET", KEYS[6]) or "0")) end
local wait = tat - (tonumber(ARGV[7]) - 1) * interval - now
local last = tonumber(redis.call("GET", KEYS[3]) or "0")
wait = math.max(wait, last + gap - now)
if wait > 0 then return { 0, wait } end
if interval > 0 then redis.call("SET", KEYS[6], tat + interval, "PX", window) end
redis.call("ZADD", KEYS[1], now, ARGV[4])
redis.call("PEXPIRE", KEYS[1], window)
if class == "active" or class == "full" then
  local own = class == "active" and KEYS[4] or KEYS[5]
  redis.call("ZADD", own, now, ARGV[4])
  redis.call("PEXPIRE", own, window)
end
redis.call("SET", KEYS[3], now, "PX", window)
return { 1, now }
`;

/** Sets the shared pause unless a longer one is already running: a pause only ever extends. */
const PAUSE = `
local ms = tonumber(ARGV[1])
if redis.call("PTTL", KEYS[1]) < ms then redis.call("SET", KEYS[1], "1", "PX", ms) end
return redis.call("PTTL", KEYS[1])
`;

/**
 * Read-only: acquisitions inside the window (all, active, full), the pause left, and all
 * acquisitions of the last ARGV[2] ms (the recent rate). KEYS: log, pause, active log, full log.
 */
const STATE = `
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local since = "(" .. (now - tonumber(ARGV[1]))
local count = redis.call("ZCOUNT", KEYS[1], since, "+inf")
local active = redis.call("ZCOUNT", KEYS[3], since, "+inf")
local full = redis.call("ZCOUNT", KEYS[4], since, "+inf")
local recent = redis.call("ZCOUNT", KEYS[1], "(" .. (now - tonumber(ARGV[2])), "+inf")
return { count, math.max(0, redis.call("PTTL", KEYS[2])), active, full, recent }
`;

/**
 * Who is asking, in the order they are served: `webhook` (refreshes an event asked for: the whole
 * budget), `active` (the active reconciliation tier), `full` (the full tier and backfill). One
 * sliding log for all: a class takes a slot only while the window holds fewer than its cap, so a
 * lower class never holds more than its share and always leaves the rest to the classes above.
 */
export type BudgetClass = "webhook" | "active" | "full";
export const BUDGET_CLASSES: readonly BudgetClass[] = ["webhook", "active", "full"];

/** Told of every slot taken: its class and how long the caller waited for it (pauses included). */
export type OnSlot = (taken: { budget: BudgetClass; waitedMs: number }) => void;

export interface RateLimiterOptions {
  /** Any connection; the scripts are defined on it (EVALSHA, falling back to EVAL). */
  redis: Redis | Cluster;
  /** `apiKeyId(key)`, never the key itself: every process with this id shares one budget. */
  keyId: string;
  /** Requests allowed per window. @defaultValue 120 */
  max?: number;
  /** @defaultValue 60_000 */
  windowMs?: number;
  /**
   * Added to the window so network jitter between our clock and the API's arrival times cannot
   * put max + 1 requests into the API's window. @defaultValue 1000
   */
  safetyMs?: number;
  /** @defaultValue "svc" */
  prefix?: string;
  /**
   * The active tier (with the full tier's slots) holds at most floor(max · share) of any window.
   * @defaultValue DEFAULTS.apiBudgetActiveShare (0.5)
   */
  activeShare?: number;
  /**
   * The full tier and backfill hold at most floor(max · share) of any window, of what the classes
   * above leave. @defaultValue DEFAULTS.apiBudgetFullShare (0.25)
   */
  fullShare?: number;
  /**
   * The webhook class's sustained share: its slots go at the rate this share of `max` sustains,
   * after a burst of what the full class's limit leaves above it (1: never spaced beyond the minimum gap).
   * @defaultValue WEBHOOK_SUSTAINED_SHARE (0.85)
   */
  webhookPaceShare?: number;
  /**
   * Spread each lower class at the rate its share sustains (window / cap between its slots).
   * @defaultValue true; false leaves only the caps (tests that fill a share at once).
   */
  spreadLowerClasses?: boolean;
  /** Per-class metrics (slots taken, time waited). */
  onSlot?: OnSlot;
}

export interface RateLimitState {
  inWindow: number;
  /** Slots of the window by class. */
  byClass: Record<BudgetClass, number>;
  /**
   * Every class's slots of the last RECENT_MS, scaled to a whole window: the rate the budget is
   * spent at now, which a window's count shows only a minute late.
   */
  recentPerWindow: number;
  max: number;
  pausedForMs: number;
}

/** How far back `state().recentPerWindow` looks. */
export const RECENT_MS = 15_000;

/**
 * Share of the window each lower class leaves to webhooks: what a burst of refreshes finds free.
 * The active tier leaves a quarter; the full tier only a tenth, since it is spread at its own
 * share anyway, so a pass progresses under steady webhook traffic instead of waiting for a lull.
 */
export const WEBHOOK_RESERVE_SHARE: Readonly<Record<BudgetClass, number>> = { webhook: 0, active: 0.25, full: 0.1 };

/**
 * The webhook class's sustained rate, as a share of the window (102 a minute at 120): above the
 * refreshes' pace share (0.75, what they aim to stay under) so that while they run at it their
 * reads are not spaced at exactly the rate they need (a queue at full utilisation), and under the
 * full class's limit (0.9) by a burst of a job's few reads.
 */
export const WEBHOOK_SUSTAINED_SHARE = 0.85;

export interface RateLimiter {
  /**
   * Waits (never fails for lack of budget) until a request may be sent, and takes the slot.
   * Resolves with the time the slot was taken, epoch ms on Redis's clock. Rejects with the
   * signal's reason if it aborts first.
   */
  acquire(opts?: { priority?: BudgetClass; signal?: AbortSignal }): Promise<number>;
  /** Nobody sharing the key gets a slot for `ms` (a 429's Retry-After). Only ever extends. */
  pause(ms: number): Promise<void>;
  /** For a metric of the budget left. */
  state(): Promise<RateLimitState>;
  /** The most slots of one window each class may hold. */
  caps: Readonly<Record<BudgetClass, number>>;
}

interface Scripts {
  svcUpstreamAcquire(
    log: string,
    pause: string,
    last: string,
    activeLog: string,
    fullLog: string,
    webhookTat: string,
    limit: number,
    windowMs: number,
    gapMs: number,
    member: string,
    budget: BudgetClass,
    cap: number,
    webhookBurst: number,
    webhookIntervalMs: number,
    classGapMs: number,
    activeCap: number,
  ): Promise<[number, number]>;
  svcUpstreamPause(pause: string, ms: number): Promise<number>;
  svcUpstreamState(
    log: string,
    pause: string,
    activeLog: string,
    fullLog: string,
    windowMs: number,
    recentMs: number,
  ): Promise<[number, number, number, number, number]>;
}

/**
 * One request budget for every process that shares an API key: a sliding log of acquisitions
 * in Redis over `windowMs + safetyMs` holding at most `max`, with a minimum gap of
 * `windowMs / max / 4` between acquisitions so a burst is spread instead of being sent at once
 * (short enough that a refresh's few reads are not held back by it: the budget's bursts are
 * paced by the refresh jobs and by the rates below). The webhook class is a cell rate at its
 * paced share (a burst, then that share's rate), so it never fills the window in a burst; each
 * lower class is spread at the rate of its share. A shared pause (from a 429) stops everyone. The lower classes hold at most
 * their shares and never their WEBHOOK_RESERVE_SHARE of the window: the full tier progresses at
 * its share under steady webhook traffic, and webhooks always find room.
 *
 * @example
 * const limiter = createRateLimiter({ redis, keyId: apiKeyId(key) });
 * await limiter.acquire({ priority: "full" });
 */
export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  const max = options.max ?? DEFAULTS.apiRate;
  const windowMs = options.windowMs ?? DEFAULTS.apiRateWindowMs;
  const effectiveWindowMs = windowMs + (options.safetyMs ?? DEFAULTS.apiRateSafetyMs);
  const minGapMs = Math.floor(windowMs / max / 4);
  if (!Number.isInteger(max) || max < 1) throw new RangeError("rate limiter max must be a whole number ≥ 1");
  if (!(windowMs > 0)) throw new RangeError("rate limiter windowMs must be > 0");
  const caps = budgetCaps(max, options.activeShare ?? DEFAULTS.apiBudgetActiveShare, options.fullShare ?? DEFAULTS.apiBudgetFullShare);
  const limitOf = (budget: BudgetClass) => max - Math.min(max - 1, Math.ceil(max * WEBHOOK_RESERVE_SHARE[budget]));
  const limits = Object.fromEntries(BUDGET_CLASSES.map((c) => [c, limitOf(c)])) as Record<BudgetClass, number>;
  const paceShare = options.webhookPaceShare ?? WEBHOOK_SUSTAINED_SHARE;
  const pacedSlots = Math.max(1, Math.floor(max * paceShare));
  // Webhooks: the paced share's rate, with a burst of what the full class's limit leaves above it
  // (so a window holds at most that limit of webhook slots; the rest is the lower classes').
  const webhookIntervalMs = paceShare >= 1 ? 0 : Math.floor(effectiveWindowMs / pacedSlots);
  const webhookBurst = Math.max(1, limits.full - pacedSlots);
  // One hash tag for the keys: one Redis Cluster slot, as the scripts need.
  const keys = redisKeys(options.prefix).upstreamBudget(options.keyId);
  const scripts = defineScripts<Scripts>(options.redis, {
    svcUpstreamAcquire: { numberOfKeys: 6, lua: ACQUIRE },
    svcUpstreamPause: { numberOfKeys: 1, lua: PAUSE },
    svcUpstreamState: { numberOfKeys: 4, lua: STATE },
  });

  return {
    caps,
    async acquire({ priority = "webhook", signal } = {}) {
      const cap = caps[priority];
      const started = performance.now();
      for (;;) {
        signal?.throwIfAborted();
        const [granted, value] = await scripts.svcUpstreamAcquire(
          keys.log,
          keys.pause,
          keys.last,
          keys.activeLog,
          keys.fullLog,
          keys.webhookTat,
          limits[priority],
          effectiveWindowMs,
          minGapMs,
          randomUUID(),
          priority,
          cap,
          webhookBurst,
          webhookIntervalMs,
          priority === "webhook" || options.spreadLowerClasses === false ? 0 : Math.floor(effectiveWindowMs / cap),
          caps.active,
        );
        if (granted === 1) {
          options.onSlot?.({ budget: priority, waitedMs: performance.now() - started });
          return value;
        }
        // The script says exactly when the blocking condition can end: sleep that long, re-ask.
        await sleep(value, signal);
      }
    },
    async pause(ms) {
      if (ms > 0) await scripts.svcUpstreamPause(keys.pause, Math.ceil(ms));
    },
    async state() {
      const recentMs = Math.min(RECENT_MS, effectiveWindowMs);
      const [inWindow, pausedForMs, active, full, recent] = await scripts.svcUpstreamState(
        keys.log,
        keys.pause,
        keys.activeLog,
        keys.fullLog,
        effectiveWindowMs,
        recentMs,
      );
      return {
        inWindow,
        byClass: { webhook: inWindow - active - full, active, full },
        recentPerWindow: Math.round((recent * effectiveWindowMs) / recentMs),
        max,
        pausedForMs,
      };
    },
  };
}

/**
 * Each class's cap: webhook the whole window, active and full their shares (at least one slot, or
 * the class could never go at all), a lower class never above a higher one.
 */
export function budgetCaps(max: number, activeShare: number, fullShare: number): Record<BudgetClass, number> {
  for (const [name, share] of [
    ["active", activeShare],
    ["full", fullShare],
  ] as const)
    if (!(share > 0 && share <= 1)) throw new RangeError(`rate limiter ${name} share must be > 0 and ≤ 1`);
  const active = Math.max(1, Math.floor(max * activeShare));
  return { webhook: max, active, full: Math.min(active, Math.max(1, Math.floor(max * fullShare))) };
}
