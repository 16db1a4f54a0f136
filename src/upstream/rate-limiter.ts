import { DEFAULTS } from "../config/defaults.js";
import { randomUUID } from "node:crypto";
import type { Cluster, Redis } from "ioredis";
import { defineScripts, redisKeys } from "../redis/redis.js";
import { sleep, untilAborted } from "../base/deadline.js";

/** The budget classes, highest first: where BudgetClass and BUDGET_CLASSES come from. */
const CLASSES = ["webhook", "active", "full"] as const;

/**
 * Who is asking, in the order they are served: `webhook` (refreshes an event asked for), `active`
 * (the active reconciliation tier), `full` (the full tier and backfill). Strict priority: each
 * class may use the whole budget, and takes what the classes above leave unused.
 */
export type BudgetClass = (typeof CLASSES)[number];
export const BUDGET_CLASSES: readonly BudgetClass[] = CLASSES;

/** The class of a call that names none (a handler's `ctx.api`): the highest. */
export const DEFAULT_BUDGET_CLASS: BudgetClass = "webhook";

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
   * Added to the window so the difference between Redis's clock and the API's cannot put max + 1
   * requests into the API's window. @defaultValue 1000
   */
  safetyMs?: number;
  /** @defaultValue "svc" */
  prefix?: string;
  /** Per-class metrics (slots taken, time waited). */
  onSlot?: OnSlot;
}

export interface RateLimitState {
  inWindow: number;
  /** Slots of the window by class. */
  byClass: Record<BudgetClass, number>;
  /**
   * Each class's slots of the last RECENT_MS, scaled to a whole window: the rate each class spends
   * the budget at now, which a window's count shows only a minute late.
   */
  recentPerWindowByClass: Record<BudgetClass, number>;
  max: number;
  pausedForMs: number;
}

/** How far back `state().recentPerWindowByClass` looks. */
const RECENT_MS = 15_000;

/**
 * Slots the webhook class may take at once after a quiet moment, ahead of the pace: a refresh
 * job's few reads (a status page, a list page or two) go together instead of one per interval.
 * The lower classes get none: they only ever go at the pace.
 */
export const WEBHOOK_BURST = 6;

/**
 * After an idle spell (a restart, an outage, a quiet service) the window the API counts is empty,
 * and the pace alone would spread its first minute's calls over that minute: what is behind is
 * found a minute late. So the budget lends to refreshes and the active tier (the catch-up): while
 * the window holds fewer than LENT_SHARE of max, slots go ahead of the pace up to that many, as
 * fast as their callers ask (at 120/min: 30 at once). The full class (a backfill, a full pass)
 * reads for minutes, where a loan only moves its calls around: it is lent nothing. The pace pays
 * the loan back: while a lent slot is in the window, the slots free until the oldest lent one
 * leaves it are spread over that time, so the window never reaches the ceiling in a burst (a
 * webhook refresh never waits for a window the loan filled) and no slot is lost to the loan.
 */
export const LENT_SHARE = 1 / 4;

/**
 * How long after its wait a refused caller still holds back the classes below it: its way back to
 * Redis (timer, network). A caller that never comes back (its process gone, its signal aborted
 * without reaching Redis) stops holding them back after this.
 */
const WAITER_GRACE_MS = 1000;

/** A slot taken: when (epoch ms on Redis's clock), and how to say its request was answered. */
export interface Slot {
  at: number;
  /**
   * The request is answered (or failed, or aborted): the slot counts from now on, not from when it
   * was taken. Not awaited by callers and never rejects: with Redis away the slot keeps its time.
   */
  answered(): void;
}

export interface RateLimiter {
  /**
   * Waits (never fails for lack of budget) until a request may be sent, and takes the slot.
   * Resolves with the time the slot was taken, epoch ms on Redis's clock. Rejects with the
   * signal's reason if it aborts first.
   */
  acquire(opts?: { priority?: BudgetClass; signal?: AbortSignal }): Promise<number>;
  /**
   * `acquire`, for a caller that sends a request on the slot and calls `answered()` once its
   * answer is in: the API counts a request when it arrives, which a stalled process (a long
   * collection, a busy host) can put well past the slot's time; counted from its answer, the
   * slot never leaves the window before the API's count of it does.
   */
  acquireSlot(opts?: { priority?: BudgetClass; signal?: AbortSignal }): Promise<Slot>;
  /** Nobody sharing the key gets a slot for `ms` (a 429's Retry-After). Only ever extends. */
  pause(ms: number): Promise<void>;
  /** For a metric of the budget left, and refresh pacing. */
  state(): Promise<RateLimitState>;
}

interface Scripts {
  svcUpstreamAcquire(
    log: string,
    pause: string,
    next: string,
    activeLog: string,
    fullLog: string,
    webhookWaiters: string,
    activeWaiters: string,
    lentLog: string,
    max: number,
    windowMs: number,
    intervalMs: number,
    burst: number,
    budget: BudgetClass,
    member: string,
    graceMs: number,
    lendable: number,
  ): Promise<[number, number]>;
  svcUpstreamAnswered(log: string, activeLog: string, fullLog: string, lentLog: string, member: string, windowMs: number): Promise<number>;
  svcUpstreamPause(pause: string, ms: number): Promise<number>;
  svcUpstreamState(
    log: string,
    pause: string,
    activeLog: string,
    fullLog: string,
    windowMs: number,
    recentMs: number,
  ): Promise<[number, number, number, number, number, number, number]>;
}

/**
 * One request budget for every process that shares an API key, spent by strict priority and
 * paced. Slots go one per `(windowMs + safetyMs) / max` (509 ms at 120/min), so the sliding window
 * never fills in a burst and then blocks everyone until its oldest slots leave. Every class may
 * use the whole budget when the classes above leave it idle (a backfill alone reads at the full
 * rate); a refused caller of a higher class registers as waiting, and a lower class takes no slot
 * while one does, in any process: a webhook refresh that arrives while a backfill saturates the
 * budget waits about one slot. The webhook class may run WEBHOOK_BURST slots ahead of the pace,
 * and an idle budget lends refreshes and the catch-up slots ahead of it (LENT_SHARE, repaid by the pace).
 * Under all of it, a sliding log in Redis holds at most `max` per window (the hard ceiling, so the
 * API never answers 429), and a shared pause (from a 429) stops everyone. A slot is logged when it
 * is taken and again when its request is answered (`acquireSlot`'s `answered`): the API counts a
 * request when it arrives, somewhere between the two, so the ceiling holds however late a stalled
 * process sends it, as long as it is answered within the window; `safetyMs` is left for the
 * clocks' difference.
 *
 * @example
 * const limiter = createRateLimiter({ redis, keyId: apiKeyId(key) });
 * await limiter.acquire({ priority: "full" });
 */
export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  const max = options.max ?? DEFAULTS.apiRate;
  const windowMs = options.windowMs ?? DEFAULTS.apiRateWindowMs;
  if (!Number.isInteger(max) || max < 1) throw new RangeError("rate limiter max must be a whole number ≥ 1");
  if (!(windowMs > 0)) throw new RangeError("rate limiter windowMs must be > 0");
  const effectiveWindowMs = windowMs + (options.safetyMs ?? DEFAULTS.apiRateSafetyMs);
  const intervalMs = Math.ceil(effectiveWindowMs / max);
  const burstOf = (budget: BudgetClass) => (budget === "webhook" ? Math.min(WEBHOOK_BURST, max) : 1);
  const lendable = Math.floor(max * LENT_SHARE);
  // One hash tag for the keys: one Redis Cluster slot, as the scripts need.
  const keys = redisKeys(options.prefix).upstreamBudget(options.keyId);
  const waitersOf: Partial<Record<BudgetClass, string>> = { webhook: keys.webhookWaiters, active: keys.activeWaiters };
  // One ask for a slot (ACQUIRE): its KEYS in its order, then its ARGV.
  const acquireKeys = [
    keys.log,
    keys.pause,
    keys.next,
    keys.activeLog,
    keys.fullLog,
    keys.webhookWaiters,
    keys.activeWaiters,
    keys.lentLog,
  ] as const;
  const scripts = defineScripts<Scripts>(options.redis, {
    svcUpstreamAcquire: { numberOfKeys: 8, lua: ACQUIRE },
    svcUpstreamAnswered: { numberOfKeys: 4, lua: ANSWERED },
    svcUpstreamPause: { numberOfKeys: 1, lua: PAUSE },
    svcUpstreamState: { numberOfKeys: 4, lua: STATE },
  });
  const askForSlot = (priority: BudgetClass, member: string) =>
    scripts.svcUpstreamAcquire(
      ...acquireKeys,
      max,
      effectiveWindowMs,
      intervalMs,
      burstOf(priority),
      priority,
      member,
      WAITER_GRACE_MS,
      lendable,
    );

  const acquireSlot = async ({ priority = DEFAULT_BUDGET_CLASS, signal }: { priority?: BudgetClass; signal?: AbortSignal } = {}) => {
    const member = randomUUID();
    const started = performance.now();
    try {
      for (;;) {
        signal?.throwIfAborted();
        // Raced against the signal: while Redis is away the command waits for it to come back.
        const [granted, value] = await untilAborted(askForSlot(priority, member), signal);
        if (granted === 1) {
          options.onSlot?.({ budget: priority, waitedMs: performance.now() - started });
          const answered = () =>
            void scripts
              .svcUpstreamAnswered(keys.log, keys.activeLog, keys.fullLog, keys.lentLog, member, effectiveWindowMs)
              .catch(() => undefined);
          return { at: value, answered };
        }
        // The script says when the blocking condition can end: sleep that long, ask again.
        await sleep(value, signal);
      }
    } catch (err) {
      // A caller that gave up no longer holds back the classes below it.
      const waiters = waitersOf[priority];
      // Not awaited: with Redis away it would hold the caller as long as the wait it gave up.
      if (signal?.aborted && waiters) options.redis.zrem(waiters, member).catch(() => undefined);
      throw err;
    }
  };

  return {
    acquireSlot,
    async acquire(opts) {
      return (await acquireSlot(opts)).at;
    },
    async pause(ms) {
      if (ms > 0) await scripts.svcUpstreamPause(keys.pause, Math.ceil(ms));
    },
    async state() {
      const recentMs = Math.min(RECENT_MS, effectiveWindowMs);
      const [inWindow, active, full, recent, recentActive, recentFull, pausedForMs] = await scripts.svcUpstreamState(
        keys.log,
        keys.pause,
        keys.activeLog,
        keys.fullLog,
        effectiveWindowMs,
        recentMs,
      );
      const perWindow = (n: number) => Math.round((n * effectiveWindowMs) / recentMs);
      return {
        inWindow,
        byClass: { webhook: inWindow - active - full, active, full },
        recentPerWindowByClass: {
          webhook: perWindow(recent - recentActive - recentFull),
          active: perWindow(recentActive),
          full: perWindow(recentFull),
        },
        max,
        pausedForMs,
      };
    },
  };
}

// ---- The budget's decisions. Each is one Lua script, so it is atomic across
// every process sharing the key, and reads Redis's clock (TIME) so processes on hosts with
// different clocks still agree.

/**
 * Take one slot, or say how long to wait.
 * KEYS: log (sorted set of every class's slot times), pause, next (when the next paced slot is
 *       due), active log, full log (each lower class's own slots, for `state`), webhook waiters,
 *       active waiters (sorted sets of callers refused, scored by when they stop counting), lent
 *       log (the slots lent ahead of the pace after an idle spell).
 * ARGV: max, window (ms, safety margin included), interval (ms between paced slots), burst (slots
 *       a class may take ahead of the pace: the webhook class a few, the others 1), class, member
 *       (one per acquire call: its slot and its waiter entry), grace (ms a waiter still counts
 *       after its wait, for its way back to Redis), lendable (slots an idle budget lends ahead of
 *       the pace).
 * Returns { 1, now } when the slot was taken, { 0, waitMs } otherwise.
 */
const ACQUIRE = `
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local max, window, interval, burst = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local class, member, grace = ARGV[5], ARGV[6], tonumber(ARGV[7])
local lendable = tonumber(ARGV[8])
local waiters = { webhook = KEYS[6], active = KEYS[7] }
local nextAt = tonumber(redis.call("GET", KEYS[3]) or "0")
-- A refused caller of a class with classes below it says it waits, so that those leave it the slot.
local function refuse(wait)
  wait = math.max(1, wait)
  local own = waiters[class]
  if own then
    -- Entries past their time (a caller gone) leave here too, so the set stays as small as the
    -- number of callers waiting now.
    redis.call("ZREMRANGEBYSCORE", own, "-inf", now)
    redis.call("ZADD", own, now + wait + grace, member)
    local last = redis.call("ZRANGE", own, -1, -1, "WITHSCORES")
    redis.call("PEXPIREAT", own, tonumber(last[2]))
  end
  return { 0, wait }
end
local paused = redis.call("PTTL", KEYS[2])
if paused > 0 then return refuse(paused) end
-- Strict priority: a lower class does not take a slot while a higher class waits for one.
local above = {}
if class == "active" then above = { KEYS[6] } elseif class == "full" then above = { KEYS[6], KEYS[7] } end
for _, key in ipairs(above) do
  redis.call("ZREMRANGEBYSCORE", key, "-inf", now)
  if redis.call("ZCARD", key) > 0 then return refuse(math.max(interval, nextAt - now)) end
end
-- The hard ceiling: never more than max in the window, so the API never answers 429.
for _, log in ipairs({ KEYS[1], KEYS[4], KEYS[5], KEYS[8] }) do redis.call("ZREMRANGEBYSCORE", log, "-inf", now - window) end
local count = redis.call("ZCARD", KEYS[1])
if count >= max then
  local oldest = redis.call("ZRANGE", KEYS[1], count - max, count - max, "WITHSCORES")
  return refuse(tonumber(oldest[2]) + window - now)
end
-- Lent slots are paid back by the pace: while one is in the window, the slots free until the oldest
-- lent one leaves it (those free now and those older slots free as they leave) are spread over
-- that time, so the window reaches the ceiling no sooner (nobody waits for a window the loan
-- filled) and no slot is lost.
local pace = interval
if redis.call("ZCARD", KEYS[8]) > 0 then
  local oldestLent = tonumber(redis.call("ZRANGE", KEYS[8], 0, 0, "WITHSCORES")[2])
  local freed = redis.call("ZCOUNT", KEYS[1], "-inf", "(" .. oldestLent)
  pace = math.max(interval, math.ceil((oldestLent + window - now) / (max - count + freed)))
end
-- Pacing: one slot per pace, a class with a burst up to burst - 1 slots ahead of it.
local due = nextAt - (burst - 1) * pace
if now < due then return refuse(due - now) end
-- A caller late by up to a pace (a loaded host's timers, the page it wrote before asking) keeps
-- its place: the next slot stays due one pace after this one was, so a busy budget is not lost to
-- lateness. Later than that, the budget was idle: with fewer than lendable slots in the window it
-- lends a webhook refresh or the active tier (a catch-up) up to lendable ahead of the pace (the
-- pace resumes once they are taken), else the pace starts afresh. The full class is not lent:
-- a backfill or a full pass reads for minutes, where a loan only moves its calls around.
local dueNext = now + pace
local lent = false
if now - nextAt <= pace then
  dueNext = nextAt + pace
elseif class ~= "full" and count < lendable then
  dueNext = math.max(nextAt, now - lendable * interval) + pace
  lent = true
end
redis.call("SET", KEYS[3], dueNext, "PX", window)
if lent then
  redis.call("ZADD", KEYS[8], now, member)
  redis.call("PEXPIRE", KEYS[8], window)
end
redis.call("ZADD", KEYS[1], now, member)
redis.call("PEXPIRE", KEYS[1], window)
local own = nil
if class == "active" then own = KEYS[4] elseif class == "full" then own = KEYS[5] end
if own then
  redis.call("ZADD", own, now, member)
  redis.call("PEXPIRE", own, window)
end
if waiters[class] then redis.call("ZREM", waiters[class], member) end
return { 1, now }
`;

/**
 * A slot's request was answered: its time in the logs becomes now (Redis's clock), so the ceiling
 * counts it until a window after its answer, which is after the API counted it, however long the
 * request took to leave. XX: a slot already out of the window is not put back.
 * KEYS: log, active log, full log. ARGV: member, window.
 */
const ANSWERED = `
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local moved = 0
for _, log in ipairs(KEYS) do
  if redis.call("ZADD", log, "XX", "CH", now, ARGV[1]) == 1 then
    moved = 1
    redis.call("PEXPIRE", log, tonumber(ARGV[2]))
  end
end
return moved
`;

/** Sets the shared pause unless a longer one is already running: a pause only ever extends. */
const PAUSE = `
local ms = tonumber(ARGV[1])
if redis.call("PTTL", KEYS[1]) < ms then redis.call("SET", KEYS[1], "1", "PX", ms) end
return redis.call("PTTL", KEYS[1])
`;

/**
 * Read-only: slots inside the window (all, active, full), the pause left, and the slots of the
 * last ARGV[2] ms (all, active, full: the rate each is spent at now). KEYS: log, pause, active
 * log, full log.
 */
const STATE = `
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
for _, since in ipairs({ now - tonumber(ARGV[1]), now - tonumber(ARGV[2]) }) do
  for _, log in ipairs({ KEYS[1], KEYS[3], KEYS[4] }) do
    table.insert(out, redis.call("ZCOUNT", log, "(" .. since, "+inf"))
  end
end
table.insert(out, math.max(0, redis.call("PTTL", KEYS[2])))
return out
`;
