import { DelayedError, type Job } from "bullmq";
import type { Cluster, Redis } from "ioredis";
import { defineScripts } from "../../redis/define-scripts.js";
import { redisKeys } from "../../redis/keys.js";
import type { SyncedKind } from "./synced-kinds.js";

/**
 * One refresh of a kind at a time, across every worker process. A refresh takes every pending id
 * of its kind: two at once would make the same reads for the same ids, and under a saturated
 * budget (long jobs) that doubling feeds itself. A job that finds the lease taken waits for it
 * (`waitForLease`, refresh-job.ts); the ids noted meanwhile are all read by the next holder, in fewer calls.
 */
export interface RefreshLease {
  /** Takes the kind's lease (or the active pass's) for `token`; undefined when another job holds it. */
  hold(kind: SyncedKind | typeof ACTIVE_PASS_LEASE, token: string): Promise<HeldLease | undefined>;
}

/**
 * The active reconciliation pass's lease: one pass at a time. Passes are scheduled every
 * interval whether the last one finished or not; under a busy budget a pass outlasts the interval,
 * and overlapping passes split the active class's share, each slower, until they held every slot
 * of the sync queue and refreshes waited behind them.
 */
export const ACTIVE_PASS_LEASE = "reconcile-active";

export interface HeldLease {
  /** Gives the lease back (only if still ours) and stops renewing it. */
  letGo(): Promise<void>;
}

/** Renews the TTL only while the holder is still `token`. KEYS: lease. ARGV: token, ttlMs. */
const RENEW = `
if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) end
return 0
`;
/** Deletes the lease only if `token` still holds it (never another holder's, after an expiry). */
const LET_GO = `
if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end
return 0
`;

interface Scripts {
  svcRenewRefreshLease(key: string, token: string, ttlMs: string): Promise<number>;
  svcLetGoRefreshLease(key: string, token: string): Promise<number>;
}

/**
 * @param ttlMs How long a lease outlives a holder that stopped renewing it (a crashed process):
 *   the sync queue's lock duration, so a crash delays the kind's refreshes no longer than it
 *   delays the crashed job itself. Renewed every third of it while the job runs.
 */
export function createRefreshLease(opts: { redis: Redis | Cluster; prefix: string; ttlMs: number }): RefreshLease {
  const { redis, ttlMs } = opts;
  const keys = redisKeys(opts.prefix);
  const scripts = defineScripts<Scripts>(redis, {
    svcRenewRefreshLease: { numberOfKeys: 1, lua: RENEW },
    svcLetGoRefreshLease: { numberOfKeys: 1, lua: LET_GO },
  });
  return {
    async hold(kind, token) {
      const key = keys.refreshLease(kind);
      if ((await redis.set(key, token, "PX", ttlMs, "NX")) !== "OK") return undefined;
      const renewal = setInterval(
        () => {
          scripts.svcRenewRefreshLease(key, token, String(ttlMs)).catch(() => undefined);
        },
        Math.max(1, Math.floor(ttlMs / 3)),
      );
      renewal.unref();
      return {
        async letGo() {
          clearInterval(renewal);
          await scripts.svcLetGoRefreshLease(key, token);
        },
      };
    },
  };
}

/** How often a refresh job waiting for its kind's lease looks again. */
export const LEASE_POLL_MS = 250;

/**
 * Parks a refresh job whose kind's lease is taken: back to delayed for LEASE_POLL_MS, spending no
 * attempt (BullMQ's moveToDelayed + DelayedError), so it runs once the holder is done.
 */
export async function waitForLease(job: Job, token: string | undefined, pollMs = LEASE_POLL_MS): Promise<never> {
  await job.moveToDelayed(Date.now() + pollMs, token);
  throw new DelayedError();
}
