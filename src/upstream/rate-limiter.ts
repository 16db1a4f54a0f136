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
 * KEYS: log (sorted set of acquisition times), pause, last (time of the latest acquisition).
 * ARGV: cap (max, or the caller's budget class's share of it), window (ms, safety margin included),
 *       minimum gap (ms), a unique member.
 * Returns { 1, now } when the slot was taken, { 0, waitMs } otherwise.
 */
const ACQUIRE = `
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local paused = redis.call("PTTL", KEYS[2])
if paused > 0 then return { 0, paused } end
local cap = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local gap = tonumber(ARGV[3])
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now - window)
local count = redis.call("ZCARD", KEYS[1])
if count >= cap then
  -- Below cap again once the (count - cap + 1) oldest entries have left the window.
  local oldest = redis.call("ZRANGE", KEYS[1], count - cap, count - cap, "WITHSCORES")
  return { 0, math.max(1, tonumber(oldest[2]) + window - now) }
end
local last = tonumber(redis.call("GET", KEYS[3]) or "0")
if now < last + gap then return { 0, last + gap - now } end
redis.call("ZADD", KEYS[1], now, ARGV[4])
redis.call("PEXPIRE", KEYS[1], window)
redis.call("SET", KEYS[3], now, "PX", window)
return { 1, now }
`;

/** Sets the shared pause unless a longer one is already running: a pause only ever extends. */
const PAUSE = `
local ms = tonumber(ARGV[1])
if redis.call("PTTL", KEYS[1]) < ms then redis.call("SET", KEYS[1], "1", "PX", ms) end
return redis.call("PTTL", KEYS[1])
`;

/** Read-only: acquisitions inside the window, and the pause left. */
const STATE = `
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local count = redis.call("ZCOUNT", KEYS[1], "(" .. (now - tonumber(ARGV[1])), "+inf")
return { count, math.max(0, redis.call("PTTL", KEYS[2])) }
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
   * The active tier may only take a slot while the window holds fewer than floor(max · share).
   * @defaultValue DEFAULTS.apiBudgetActiveShare (0.5)
   */
  activeShare?: number;
  /**
   * The full tier and backfill may only take a slot while the window holds fewer than
   * floor(max · share): never more than this share of any window. @defaultValue DEFAULTS.apiBudgetFullShare (0.25)
   */
  fullShare?: number;
  /** Per-class metrics (slots taken, time waited). */
  onSlot?: OnSlot;
}

export interface RateLimitState {
  inWindow: number;
  max: number;
  pausedForMs: number;
}

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
    cap: number,
    windowMs: number,
    gapMs: number,
    member: string,
  ): Promise<[number, number]>;
  svcUpstreamPause(pause: string, ms: number): Promise<number>;
  svcUpstreamState(log: string, pause: string, windowMs: number): Promise<[number, number]>;
}

/**
 * One request budget for every process that shares an API key: a sliding log of acquisitions
 * in Redis over `windowMs + safetyMs` holding at most `max`, with a minimum gap of
 * `windowMs / max / 2` between acquisitions so a burst is spread over the window instead of
 * being sent at once. A shared pause (from a 429) stops everyone.
 *
 * @example
 * const limiter = createRateLimiter({ redis, keyId: apiKeyId(key) });
 * await limiter.acquire({ priority: "full" });
 */
export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  const max = options.max ?? DEFAULTS.apiRate;
  const windowMs = options.windowMs ?? DEFAULTS.apiRateWindowMs;
  const effectiveWindowMs = windowMs + (options.safetyMs ?? DEFAULTS.apiRateSafetyMs);
  const minGapMs = Math.floor(windowMs / max / 2);
  if (!Number.isInteger(max) || max < 1) throw new RangeError("rate limiter max must be a whole number ≥ 1");
  if (!(windowMs > 0)) throw new RangeError("rate limiter windowMs must be > 0");
  const caps = budgetCaps(max, options.activeShare ?? DEFAULTS.apiBudgetActiveShare, options.fullShare ?? DEFAULTS.apiBudgetFullShare);
  // One hash tag for the three keys: one Redis Cluster slot, as the scripts need.
  const keys = redisKeys(options.prefix).upstreamBudget(options.keyId);
  const scripts = defineScripts<Scripts>(options.redis, {
    svcUpstreamAcquire: { numberOfKeys: 3, lua: ACQUIRE },
    svcUpstreamPause: { numberOfKeys: 1, lua: PAUSE },
    svcUpstreamState: { numberOfKeys: 2, lua: STATE },
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
          cap,
          effectiveWindowMs,
          minGapMs,
          randomUUID(),
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
      const [inWindow, pausedForMs] = await scripts.svcUpstreamState(keys.log, keys.pause, effectiveWindowMs);
      return { inWindow, max, pausedForMs };
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
