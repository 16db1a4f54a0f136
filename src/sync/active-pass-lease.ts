import { DelayedError, type Job } from "bullmq";
import type { Cluster, Redis } from "ioredis";
import { defineScripts, redisKeys } from "../redis/redis.js";

/**
 * One active reconciliation pass at a time, across every worker process: under a busy budget a
 * pass outlasts the interval, and overlapping passes split the active class's share, each slower,
 * until they held every slot of the sync queue and refreshes waited behind them. A lease, not the
 * refreshes' deduplicated job (refresh-queue.ts runWithin): three jobs start passes under
 * different rules (a job scheduler's tick, which BullMQ cannot deduplicate, is skipped while a pass
 * runs; an operator's request and a catch-up wait behind it), and a catch-up carries its gap's
 * start as data, which a shared deduplicated job would drop.
 */
export interface ActivePassLease {
  /** Takes the lease for `token`; undefined when another pass holds it. */
  hold(token: string): Promise<HeldLease | undefined>;
}

export interface HeldLease {
  /** Gives the lease back (only if still ours) and stops renewing it. */
  letGo(): Promise<void>;
}

/**
 * Runs a command on the lease only while `token` holds it: PEXPIRE renews its TTL, DEL lets it go
 * (never another holder's, after an expiry). KEYS: lease. ARGV: token, command, its arguments.
 */
const IF_HELD = `
if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call(ARGV[2], KEYS[1], unpack(ARGV, 3)) end
return 0
`;

interface Scripts {
  svcIfActivePassLeaseHeld(key: string, token: string, command: "PEXPIRE" | "DEL", ...args: string[]): Promise<number>;
}

/**
 * @param ttlMs How long a lease outlives a holder that stopped renewing it (a crashed process):
 *   the sync queue's lock duration, so a crash delays the next pass no longer than it delays the
 *   crashed job itself. Renewed every third of it while the pass runs.
 */
export function createActivePassLease(opts: { redis: Redis | Cluster; prefix: string; ttlMs: number; account?: string }): ActivePassLease {
  const { redis, ttlMs } = opts;
  const key = redisKeys(opts.prefix).syncOf(opts.account).activePassLease;
  const scripts = defineScripts<Scripts>(redis, { svcIfActivePassLeaseHeld: { numberOfKeys: 1, lua: IF_HELD } });
  return {
    async hold(token) {
      if ((await redis.set(key, token, "PX", ttlMs, "NX")) !== "OK") return undefined;
      const renewal = setInterval(
        () => {
          scripts.svcIfActivePassLeaseHeld(key, token, "PEXPIRE", String(ttlMs)).catch(() => undefined);
        },
        Math.max(1, Math.floor(ttlMs / 3)),
      );
      renewal.unref();
      return {
        async letGo() {
          clearInterval(renewal);
          await scripts.svcIfActivePassLeaseHeld(key, token, "DEL");
        },
      };
    },
  };
}

/** Whether an active pass of the account runs now: another holds its lease, and `hold` would find it taken. */
export async function activePassRunning(redis: Redis | Cluster, prefix: string, account?: string): Promise<boolean> {
  return (await redis.exists(redisKeys(prefix).syncOf(account).activePassLease)) === 1;
}

/**
 * Parks a pass that waits behind the running one: back to delayed for `pollMs`, spending no
 * attempt (BullMQ's moveToDelayed + DelayedError), so it runs within `pollMs` of that pass's end.
 */
export async function waitForRunningPass(job: Job, token: string | undefined, pollMs: number): Promise<never> {
  await job.moveToDelayed(Date.now() + pollMs, token);
  throw new DelayedError();
}
