import type { BackfillProgress } from "../sync/resumable-backfill.js";

/**
 * The progress line of `svc-webhooks backfill` for one kind: records so far, the rate of this
 * run, and an ETA when the size of the list is known from an earlier complete pass — never
 * faster than the budget allows (its pages per window, 100 records a page: the full class may take
 * all of it when nothing above it runs).
 */
export function createBackfillProgress(options: {
  /** Most records a second the whole budget can read. */
  budgetRecordsPerSecond: number;
  /** Records of the kind's list, from the last complete pass (full tier or backfill), when known. */
  expected: (kind: string) => number | undefined;
  now?: () => number;
}) {
  const now = options.now ?? (() => performance.now());
  const started = new Map<string, number>();
  return function line(p: BackfillProgress): string {
    if (p.skipped) return `${p.kind}: done in the interrupted run (${p.checkpoint.records} records), not read again`;
    if (!started.has(p.kind)) started.set(p.kind, now());
    const seconds = (now() - (started.get(p.kind) ?? now())) / 1000;
    const rate = seconds > 0 ? p.records / seconds : 0;
    const head = `${p.kind}: ${p.checkpoint.records} records, ${p.checkpoint.pages} pages`;
    const resumed = p.resumed ? " (resumed)" : "";
    if (p.done) return `${head}${resumed} — done`;
    const expected = options.expected(p.kind);
    const speed = Math.min(rate > 0 ? rate : options.budgetRecordsPerSecond, options.budgetRecordsPerSecond);
    const eta =
      expected !== undefined && expected > p.checkpoint.records && speed > 0
        ? `ETA ${formatDuration((expected - p.checkpoint.records) / speed)}`
        : `ETA unknown (budget ≤ ${Math.round(options.budgetRecordsPerSecond)} records/s)`;
    return `${head}${resumed}, ${rate.toFixed(1)} records/s, ${eta}`;
  };
}

/** 75 → "1m15s", 3700 → "1h01m". */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}
