import type { RateLimitState } from "../upstream/rate-limiter.js";

/**
 * Refreshes paced by the budget, so that cost per event falls as the rate rises. After a run, the
 * kind's next run starts no sooner than the pace says (refresh-job.ts), the longer the faster the
 * webhook class spends the budget now (the last 15 s scaled to a window: a window's own count would
 * tell a minute late): nothing below a third of `share`, `maxWaitMs` at `share` and above, in
 * proportion between. Only the webhook class counts: it is what refreshes compete with at their own
 * priority, while the classes below (a backfill, a full pass) take only what refreshes leave, and
 * keep the whole budget busy when they run. The events that come meanwhile join the next run's
 * batch: a busy minute makes fewer, fuller reads (one status page for many orders) instead of one
 * small job a second. `maxWaitMs` bounds the freshness traded for calls. Says how long the next
 * run waits, as the budget's use says (0 … `maxWaitMs`).
 */
export type RefreshPace = () => Promise<number>;

export interface RefreshPaceOptions {
  /** The shared budget's window (every process). */
  state: () => Promise<Pick<RateLimitState, "recentPerWindowByClass" | "max">>;
  /** Share of the rate refreshes aim to keep the budget under (SYNC_REFRESH_PACE_SHARE); 1 turns pacing off. */
  share: number;
  /** The longest wait, at the share and above (SYNC_REFRESH_PACE_MAX_WAIT_MS). */
  maxWaitMs: number;
}

/** The wait at a rate of `used` slots per window against a share of `high` slots (the curve RefreshPace describes). */
export function paceWaitMs(used: number, high: number, maxWaitMs: number): number {
  const low = high / 3;
  if (high <= 0 || used <= low) return 0;
  return Math.round(maxWaitMs * Math.min(1, (used - low) / (high - low)));
}

export function createRefreshPace(options: RefreshPaceOptions): RefreshPace {
  return async () => {
    if (options.share >= 1 || options.maxWaitMs <= 0) return 0;
    const { recentPerWindowByClass, max } = await options.state();
    return paceWaitMs(recentPerWindowByClass.webhook, Math.floor(max * options.share), options.maxWaitMs);
  };
}
