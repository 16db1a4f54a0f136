import { expectDefined } from "../expect-defined.js";

/** A record's sort key: compared element by element. */
export type Key = (string | number)[];

export const compareKeys = (a: Key, b: Key): number => {
  // A shorter key ties on what it has: a prefix is a range bound.
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a[i];
    const y = b[i];
    if (x === undefined || y === undefined) break;
    if (x < y) return -1;
    if (x > y) return 1;
  }
  return 0;
};

interface Entry<T> {
  key: Key;
  item: T;
}

/** First position whose key is ≥ `key` (`strict`: > `key`). */
function search<T>(entries: Entry<T>[], key: Key, strict: boolean): number {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const c = compareKeys(expectDefined(entries[mid], "a position within the list").key, key);
    if (c < 0 || (strict && c === 0)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export interface PageQuery<T> {
  /** The partition to read (see `partitionsOf`). */
  partition: string;
  /** 1: ascending keys, -1: descending. */
  direction: 1 | -1;
  /** Only items strictly past this key in `direction` (a cursor). */
  after?: Key;
  /** Inclusive range of keys (a prefix bounds every key it starts). */
  lower?: Key;
  upper?: Key;
  /** A filter the partition does not cover (checked while walking). */
  filter?: (item: T) => boolean;
  limit: number;
}

/**
 * The sandbox's lists at a company's size: each record sits, sorted by its key, in every partition
 * it belongs to (e.g. "all", "restaurant r", "status s", "r and s"), kept up to date on every
 * change, so a page is a binary search and a short walk instead of a filter and a sort of
 * everything. The key and partitions a record was placed under are remembered, so a record changed
 * in place is moved by `upsert` without knowing its old values.
 */
export function createListIndex<T extends { id: string }>(opts: { keyOf: (item: T) => Key; partitionsOf: (item: T) => string[] }) {
  const partitions = new Map<string, Entry<T>[]>();
  const placed = new Map<string, { key: Key; partitions: string[] }>();

  const removeFrom = (name: string, key: Key, id: string) => {
    const entries = partitions.get(name);
    if (!entries) return;
    for (let i = search(entries, key, false); i < entries.length; i++) {
      const entry = expectDefined(entries[i], "a position within the list");
      if (compareKeys(entry.key, key) !== 0) break;
      if (entry.item.id === id) {
        entries.splice(i, 1);
        return;
      }
    }
  };

  const remove = (id: string) => {
    const was = placed.get(id);
    if (!was) return;
    for (const name of was.partitions) removeFrom(name, was.key, id);
    placed.delete(id);
  };

  const upsert = (item: T) => {
    const key = opts.keyOf(item);
    const names = opts.partitionsOf(item);
    const was = placed.get(item.id);
    if (was && compareKeys(was.key, key) === 0 && was.key.length === key.length && was.partitions.join("\n") === names.join("\n")) return;
    remove(item.id);
    for (const name of names) {
      let entries = partitions.get(name);
      if (!entries) partitions.set(name, (entries = []));
      const last = entries.at(-1);
      // Appending in key order (seeding, new records) is the common case: no search, no move.
      if (last === undefined || compareKeys(last.key, key) < 0) entries.push({ key, item });
      else entries.splice(search(entries, key, true), 0, { key, item });
    }
    placed.set(item.id, { key, partitions: names });
  };

  /** One page of a partition, and whether more items follow it. */
  const page = (q: PageQuery<T>): { items: T[]; more: boolean } => {
    const entries = partitions.get(q.partition) ?? [];
    let start = q.lower ? search(entries, q.lower, false) : 0;
    let end = q.upper ? search(entries, q.upper, true) : entries.length; // exclusive
    if (q.after && q.direction === 1) start = Math.max(start, search(entries, q.after, true));
    if (q.after && q.direction === -1) end = Math.min(end, search(entries, q.after, false));
    const items: T[] = [];
    const step = q.direction;
    for (let i = step === 1 ? start : end - 1; step === 1 ? i < end : i >= start; i += step) {
      const { item } = expectDefined(entries[i], "a position within the list");
      if (q.filter && !q.filter(item)) continue;
      if (items.length === q.limit) return { items, more: true };
      items.push(item);
    }
    return { items, more: false };
  };

  /**
   * The item at `fraction` (0 ≤ f < 1) of a partition's range from `lower` on, for picking at
   * random without copying a list (live traffic). Undefined when the range is empty.
   */
  const pick = (partition: string, fraction: number, lower?: Key): T | undefined => {
    const entries = partitions.get(partition) ?? [];
    const start = lower ? search(entries, lower, false) : 0;
    return entries[start + Math.floor(fraction * (entries.length - start))]?.item;
  };

  return { upsert, remove, page, pick, size: (partition: string) => partitions.get(partition)?.length ?? 0 };
}

export type ListIndex<T extends { id: string }> = ReturnType<typeof createListIndex<T>>;
