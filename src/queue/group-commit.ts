interface Waiter<T, R> {
  item: T;
  resolve: (r: R) => void;
  reject: (e: unknown) => void;
}

/**
 * Group commit: callers hand in one item each and get their own result, while the items that
 * arrive during one I/O turn, or while the previous batch is in flight, are written together in
 * one round trip. A lone item costs one deferral (setImmediate), never a timer.
 */
export function groupCommit<T, R>(flush: (items: T[]) => Promise<R[]>, maxBatch: number): (item: T) => Promise<R> {
  let waiting: Waiter<T, R>[] = [];
  let scheduled = false;

  const drain = async () => {
    while (waiting.length > 0) {
      const batch = waiting.slice(0, maxBatch);
      waiting = waiting.slice(batch.length);
      try {
        const results = await flush(batch.map((w) => w.item));
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
      waiting.push({ item, resolve, reject });
      if (!scheduled) {
        scheduled = true;
        setImmediate(() => void drain());
      }
    });
}
