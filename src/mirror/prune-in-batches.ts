import { EventLogError } from "./event-log-error.js";

/**
 * Deletes what is older than `olderThan` in batches of `batchSize` rows, each batch its own
 * statement (and transaction): short locks and no long scan under one lock. `deleteBatch` deletes
 * at most `limit` rows (SKIP LOCKED, so two pruners do not wait on each other) and says how many.
 * Returns how many rows were deleted in all.
 */
export async function pruneInBatches(olderThan: Date, batchSize: number, deleteBatch: (limit: number) => Promise<number>): Promise<number> {
  if (!(olderThan instanceof Date) || Number.isNaN(olderThan.getTime()))
    throw new EventLogError("invalid_filter", "olderThan", "olderThan must be a valid date");
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000)
    throw new EventLogError("invalid_filter", "batchSize", "batchSize must be an integer from 1 to 10000");
  let total = 0;
  for (;;) {
    const deleted = await deleteBatch(batchSize);
    total += deleted;
    if (deleted < batchSize) return total;
  }
}
