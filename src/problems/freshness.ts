import type { SyncCheckpoint } from "../mirror/sync-checkpoints.js";
import { SYNCED_KINDS } from "../sync/resources.js";
import type { ProblemTracker } from "./problem-tracker.js";

// What the mirror's freshness tells the problem tracker (docs/operations.md, "Problems and
// alerts"): mirror_stale (the account's, subject the kind) opens when no full pass of that kind
// completed within `staleAfterMs` (three reconciliation intervals, the SvcReconciliationStalled
// alert's) while the API answers (no upstream_unreachable open, the account's key not refused):
// when the API is away, that problem says it already. A complete pass resolves it. A kind that
// never completed a pass is importing, not stale.

/** How many reconciliation intervals without a complete pass make a kind stale (as the stalled alert). */
export const STALE_INTERVALS = 3;

export async function checkFreshness(deps: {
  tracker: ProblemTracker;
  /** Every account whose mirror is synced (default among them). */
  accounts: readonly string[];
  /** The account's full-tier checkpoints. */
  checkpointsOf: (account: string) => Promise<readonly SyncCheckpoint[]>;
  staleAfterMs: number;
  now: number;
}): Promise<void> {
  const { tracker } = deps;
  const open = tracker.openKeys();
  const apiAway = open.some((k) => k.kind === "upstream_unreachable");
  const refused = new Set(open.filter((k) => k.kind === "key_refused").map((k) => k.account));
  for (const account of deps.accounts) {
    const checkpoints = await deps.checkpointsOf(account);
    for (const kind of SYNCED_KINDS) {
      const at = checkpoints.find((c) => c.tier === "full" && c.kind === kind)?.lastCompleteAt;
      if (!at) continue;
      const key = { account, kind: "mirror_stale", subject: kind } as const;
      if (deps.now - at.getTime() <= deps.staleAfterMs) tracker.cleared(key);
      else if (!apiAway && !refused.has(account))
        tracker.report({
          ...key,
          cause: `no complete full pass of ${kind} since ${at.toISOString()} (one is due every ${Math.round(deps.staleAfterMs / STALE_INTERVALS / 1000)} s)`,
        });
    }
  }
}
