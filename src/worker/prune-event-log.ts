/**
 * Deletes events received more than `retentionDays` ago, in batches, so no statement holds a long
 * lock or a large transaction; returns how many went. Run hourly by the sync queue's scheduler.
 */
export async function pruneEventLog(
  log: { prune(olderThan: Date, batchSize?: number): Promise<number> },
  retentionDays: number,
  batchSize = 500,
): Promise<number> {
  const olderThan = new Date(Date.now() - retentionDays * 24 * 3600 * 1000);
  let total = 0;
  for (;;) {
    const deleted = await log.prune(olderThan, batchSize);
    total += deleted;
    if (deleted < batchSize) return total;
  }
}
