/** The order a list came in, read off its records: the spec states none, so it is never assumed. */
export type ListDirection = "descending" | "ascending" | "unknown";

/**
 * Watches the sort keys (epoch ms: an order's `createdAt`, a booking's `date`) of a list as its
 * pages arrive and says which way it runs. Equal neighbours say nothing; one step against the
 * direction seen makes it `unknown` for good (the list is in no order a read can stop early by).
 */
export interface ListOrder {
  /** Feeds the keys of the next page, in list order; a key that does not parse (NaN) is skipped. */
  observe(keys: readonly number[]): void;
  readonly direction: ListDirection;
  /**
   * Whether a record with `key` can no longer come further down this list: the list runs
   * newest first and already went below it, or oldest first and already went above it.
   */
  passed(key: number): boolean;
}

export function createListOrder(): ListOrder {
  let last: number | undefined;
  let down = false;
  let up = false;
  return {
    observe(keys) {
      for (const key of keys) {
        if (Number.isNaN(key)) continue;
        if (last !== undefined && key < last) down = true;
        if (last !== undefined && key > last) up = true;
        last = key;
      }
    },
    get direction(): ListDirection {
      if (down && !up) return "descending";
      if (up && !down) return "ascending";
      return "unknown";
    },
    passed(key) {
      if (last === undefined || Number.isNaN(key)) return false;
      const direction = this.direction;
      if (direction === "descending") return last < key;
      if (direction === "ascending") return last > key;
      return false;
    },
  };
}
