// Group commit: many callers' single items written in one round trip. Generic (the edge's Redis
// appends, the queue's adds, the event log's rows all batch through it), so it lives below them.
import { UnavailableError, withTimeout, type UnavailableClass } from "./deadline.js";
import { expectDefined } from "../errors.js";

interface Waiter<T, R> {
  item: T;
  /** performance.now() by which this item's batch must be written (Infinity: no deadline). */
  deadline: number;
  resolve: (r: R) => void;
  reject: (e: unknown) => void;
}

/** Each caller's time for its item to be written; past it the caller gets the deadline's error (the queue's QueueUnavailableError). */
export interface GroupCommitDeadline {
  ms: number;
  /** What is written, for the error message ("enqueue"). */
  what: string;
  /** The error a late batch rejects with (UnavailableError by default). */
  Unavailable?: UnavailableClass;
}

/**
 * Group commit: callers hand in one item each and get their own result, while the items that
 * arrive during one I/O turn, or while the previous batch is in flight, are written together in
 * one round trip. A lone item costs one deferral (setImmediate), never a timer.
 *
 * With a `deadline`, a batch races one timer against its oldest item's deadline, which no item
 * in it outlives (a timer and a race per item were ~2 % of the edge's CPU); items queued behind
 * a slow batch keep their own deadlines, and a batch whose time ran out while it waited is
 * refused without a round trip.
 */
export function groupCommit<T, R>(
  flush: (items: T[]) => Promise<R[]>,
  maxBatch: number,
  deadline?: GroupCommitDeadline,
): (item: T) => Promise<R> {
  let waiting: Waiter<T, R>[] = [];
  let scheduled = false;

  const write = (batch: Waiter<T, R>[]): Promise<R[]> => {
    const items = batch.map((w) => w.item);
    if (!deadline) return flush(items);
    const left = expectDefined(batch[0], "a batch is never empty").deadline - performance.now();
    const Unavailable = deadline.Unavailable ?? UnavailableError;
    if (left <= 0) return Promise.reject(new Unavailable(`${deadline.what} timed out after ${deadline.ms} ms`));
    return withTimeout(flush(items), left, deadline.what, Unavailable);
  };

  const drain = async () => {
    while (waiting.length > 0) {
      const batch = waiting.slice(0, maxBatch);
      waiting = waiting.slice(batch.length);
      try {
        const results = await write(batch);
        if (results.length !== batch.length) throw new Error(`flush returned ${results.length} results for ${batch.length} items`);
        results.forEach((result, i) => batch[i]?.resolve(result));
      } catch (err) {
        // A failed batch is not acknowledged, even if Redis ran some of its adds: every caller sees
        // the error, the sender retries after our 503, and the retry is deduplicated by event id.
        for (const w of batch) w.reject(err);
      }
    }
    scheduled = false;
  };

  return (item) =>
    new Promise<R>((resolve, reject) => {
      waiting.push({ item, deadline: deadline ? performance.now() + deadline.ms : Infinity, resolve, reject });
      if (!scheduled) {
        scheduled = true;
        setImmediate(() => void drain());
      }
    });
}
