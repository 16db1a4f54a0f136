import { DEFAULTS } from "../config/defaults.js";
import { randomUUID } from "node:crypto";
import type { Cluster, Redis } from "ioredis";
import { defineScripts, redisKeys } from "../redis/redis.js";
import { ACQUIRE, PAUSE, STATE } from "./rate-limiter-scripts.js";
import { sleep, unlessAborted } from "./sleep.js";

/**
 * Who is asking, in the order they are served: `webhook` (refreshes an event asked for), `active`
 * (the active reconciliation tier), `full` (the full tier and backfill). Strict priority: each
 * class may use the whole budget, and takes what the classes above leave unused.
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
export const RECENT_MS = 15_000;

/**
 * Slots the webhook class may take at once after a quiet moment, ahead of the pace: a refresh
 * job's few reads (a status page, a list page or two) go together instead of one per interval.
 * The lower classes get none: they only ever go at the pace.
 */
export const WEBHOOK_BURST = 6;

/**
 * How long after its wait a refused caller still holds back the classes below it: its way back to
 * Redis (timer, network). A caller that never comes back (its process gone, its signal aborted
 * without reaching Redis) stops holding them back after this.
 */
const WAITER_GRACE_MS = 1000;

export interface RateLimiter {
  /**
   * Waits (never fails for lack of budget) until a request may be sent, and takes the slot.
   * Resolves with the time the slot was taken, epoch ms on Redis's clock. Rejects with the
   * signal's reason if it aborts first.
   */
  acquire(opts?: { priority?: BudgetClass; signal?: AbortSignal }): Promise<number>;
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
    max: number,
    windowMs: number,
    intervalMs: number,
    burst: number,
    budget: BudgetClass,
    member: string,
    graceMs: number,
  ): Promise<[number, number]>;
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
 * budget waits about one slot. The webhook class may run WEBHOOK_BURST slots ahead of the pace.
 * Under all of it, a sliding log in Redis holds at most `max` per window (the hard ceiling, so the
 * API never answers 429), and a shared pause (from a 429) stops everyone.
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
  // One hash tag for the keys: one Redis Cluster slot, as the scripts need.
  const keys = redisKeys(options.prefix).upstreamBudget(options.keyId);
  const waitersOf: Partial<Record<BudgetClass, string>> = { webhook: keys.webhookWaiters, active: keys.activeWaiters };
  const scripts = defineScripts<Scripts>(options.redis, {
    svcUpstreamAcquire: { numberOfKeys: 7, lua: ACQUIRE },
    svcUpstreamPause: { numberOfKeys: 1, lua: PAUSE },
    svcUpstreamState: { numberOfKeys: 4, lua: STATE },
  });

  return {
    async acquire({ priority = "webhook", signal } = {}) {
      const member = randomUUID();
      const started = performance.now();
      try {
        for (;;) {
          signal?.throwIfAborted();
          // Raced against the signal: while Redis is away the command waits for it to come back.
          const [granted, value] = await unlessAborted(
            scripts.svcUpstreamAcquire(
              keys.log,
              keys.pause,
              keys.next,
              keys.activeLog,
              keys.fullLog,
              keys.webhookWaiters,
              keys.activeWaiters,
              max,
              effectiveWindowMs,
              intervalMs,
              burstOf(priority),
              priority,
              member,
              WAITER_GRACE_MS,
            ),
            signal,
          );
          if (granted === 1) {
            options.onSlot?.({ budget: priority, waitedMs: performance.now() - started });
            return value;
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
