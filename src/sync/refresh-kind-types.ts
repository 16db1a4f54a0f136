import type { Logger } from "pino";
import type { RefreshReadContext } from "./refresh-read.js";
import type { RefreshScheduler } from "./refresh-scheduler.js";
import type { SyncedKind } from "./resources.js";

// What a kind's refresh takes and returns, apart from refresh-kind.ts so that refresh-menus.ts
// (which refresh-kind.ts calls) can use them without importing its caller.

export interface RefreshKindDeps extends Omit<RefreshReadContext, "kind"> {
  scheduler: RefreshScheduler;
  logger: Logger;
  kind: SyncedKind;
  /** How long an id the API does not list stays pending (with backoff) before it is reported. */
  giveUpMs: number;
  /** Told of every read made (metrics). */
  onRead?: (read: { kind: SyncedKind; scope: "company" | "restaurant" }) => void;
  /** Told of every id given up on, after its row was written (the metric). */
  onUnlisted?: (kind: SyncedKind) => void;
  /** @defaultValue Date.now */
  now?: () => number;
}

export interface RefreshOutcome {
  calls: number;
  reads: number;
  written: number;
  /** Pending ids this job read. */
  found: number;
  /** Ids no read found this round: kept pending with backoff. */
  missing: string[];
  /** Ids given up on this round (reported in unlisted_records). */
  unlisted: string[];
}
