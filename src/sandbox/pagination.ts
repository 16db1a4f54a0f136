import { SandboxError } from "./types.js";

/** `limit` from the query: 1..100, default 50 (docs/upstream.md). */
export function parseLimit(value: string | undefined): number {
  if (value === undefined) return 50;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > 100)
    throw new SandboxError(400, "invalid_request", "limit must be a whole number from 1 to 100");
  return n;
}

type Key = (string | number)[];

const compareKeys = (a: Key, b: Key): number => {
  for (const [i, x] of a.entries()) {
    const y = b[i];
    if (y === undefined) break; // a shorter key ties on what it has (paginate checks a cursor's width)
    if (x < y) return -1;
    if (x > y) return 1;
  }
  return 0;
};

/**
 * One page of a list sorted by `keyOf` (`direction` -1: descending). The cursor is
 * opaque to clients: the sort key of the page's last item, so a page boundary stays valid while
 * items change or arrive. A cursor that does not decode → 400. `repeatCursor` (a fault) hands back
 * the request's cursor instead of the next one.
 */
export function paginate<T>(
  items: T[],
  keyOf: (item: T) => Key,
  direction: 1 | -1,
  limit: number,
  cursor: string | undefined,
  repeatCursor = false,
): { data: T[]; nextCursor: string | null } {
  const sorted = [...items].sort((a, b) => direction * compareKeys(keyOf(a), keyOf(b)));
  const first = items[0];
  const width = first === undefined ? undefined : keyOf(first).length;
  let rest = sorted;
  if (cursor !== undefined) {
    let after: Key;
    try {
      const decoded = Buffer.from(cursor, "base64url").toString("utf8");
      if (!decoded.startsWith("v1:")) throw new Error("version");
      after = JSON.parse(decoded.slice(3)) as Key;
      if (!Array.isArray(after) || (width !== undefined && after.length !== width)) throw new Error("shape");
    } catch {
      throw new SandboxError(400, "invalid_request", "cursor is not valid");
    }
    rest = sorted.filter((item) => direction * compareKeys(keyOf(item), after) > 0);
  }
  const data = rest.slice(0, limit);
  const last = data.at(-1);
  const after = last === undefined ? null : Buffer.from(`v1:${JSON.stringify(keyOf(last))}`).toString("base64url");
  if (repeatCursor) return { data, nextCursor: cursor ?? after };
  return { data, nextCursor: rest.length > limit ? after : null };
}
