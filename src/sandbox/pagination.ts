import type { FaultRule } from "./faults.js";
import type { Key, ListIndex, PageQuery } from "./list-index.js";
import { SandboxError } from "./types.js";

/** `limit` from the query: 1..100, default 50 (docs/upstream.md). */
export function parseLimit(value: string | undefined): number {
  if (value === undefined) return 50;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > 100)
    throw new SandboxError(400, "invalid_request", "limit must be a whole number from 1 to 100");
  return n;
}

/** The cursors of a `cursorCycle` fault: not the list's own (they carry no sort key). */
const CYCLE = "cycle-";

const encodeCursor = (key: Key) => Buffer.from(`v1:${JSON.stringify(key)}`).toString("base64url");

/** The sort key a cursor carries; 400 unless it is one of ours of the list's key width. */
function decodeCursor(cursor: string, width: number): Key {
  try {
    const decoded = Buffer.from(cursor, "base64url").toString("utf8");
    if (!decoded.startsWith("v1:")) throw new Error("version");
    const after = JSON.parse(decoded.slice(3)) as unknown;
    if (!Array.isArray(after) || after.length !== width || !after.every((k) => typeof k === "string" || typeof k === "number"))
      throw new Error("shape");
    return after;
  } catch {
    throw new SandboxError(400, "invalid_request", "cursor is not valid");
  }
}

/**
 * One page of an indexed list. The cursor is opaque to clients: the sort key of the page's last
 * item, found again by binary search, so a page boundary stays valid while items change, arrive
 * or leave. A cursor that does not decode → 400. Faults: `repeatCursor` hands back the request's
 * cursor instead of the next one (on a first page: the cursor after its own last item, even when
 * nothing follows); `pageRecords` answers that many records, the page's own over again;
 * `cursorCycle` answers empty pages whose cursors go round a cycle of that length.
 */
export function paginate<T extends { id: string }>(
  index: ListIndex<T>,
  query: Omit<PageQuery<T>, "after">,
  list: { keyOf: (item: T) => Key; width: number },
  cursor: string | undefined,
  fault: Pick<FaultRule, "repeatCursor" | "pageRecords" | "cursorCycle"> = {},
): { data: T[]; nextCursor: string | null } {
  if (fault.cursorCycle !== undefined) {
    const at = cursor?.startsWith(CYCLE) ? Number(cursor.slice(CYCLE.length)) : -1;
    return { data: [], nextCursor: `${CYCLE}${(at + 1) % fault.cursorCycle}` };
  }
  const { keyOf, width } = list;
  const after = cursor === undefined ? undefined : decodeCursor(cursor, width);
  const { items, more } = index.page({ ...query, ...(after ? { after } : {}) });
  const last = items.at(-1);
  const next = last === undefined ? null : encodeCursor(keyOf(last));
  const data =
    fault.pageRecords === undefined
      ? items
      : Array.from({ length: fault.pageRecords }, (_, i) => items[i % items.length]).filter((item): item is T => item !== undefined);
  if (fault.repeatCursor) return { data, nextCursor: cursor ?? next };
  return { data, nextCursor: more ? next : null };
}
