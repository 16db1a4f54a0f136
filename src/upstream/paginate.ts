import { UpstreamPageRefusedError } from "./errors.js";
import type { Page } from "./models.js";

/**
 * Cursors a walk remembers: a cycle longer than this is not caught by the set (the walks that
 * could meet one are capped in pages), while a hostile upstream cannot grow it without bound.
 */
const REMEMBERED_CURSORS = 10_000;

/**
 * The cursors one walk of a list was handed, so a stuck or cycling upstream stops the walk
 * instead of paging forever. Starts with the cursor the walk starts at, when it has one.
 */
export function createCursorGuard(start?: string) {
  const seen = new Set<string>(start === undefined ? [] : [start]);
  return {
    /**
     * Takes the next cursor the API handed back after `pages` page(s) of this walk; throws
     * `UpstreamPageRefusedError` code `repeated_cursor` when the walk was handed it already.
     */
    next(cursor: string, pages: number): void {
      if (seen.has(cursor))
        throw new UpstreamPageRefusedError(
          `the API handed back the same cursor again after ${pages} page(s): stopped a list that would never end`,
          { code: "repeated_cursor" },
        );
      seen.add(cursor);
      if (seen.size > REMEMBERED_CURSORS)
        for (const oldest of seen) {
          seen.delete(oldest);
          break;
        }
    },
  };
}

/**
 * Every page of a cursor-paginated list, in order, fetching the next page only when the caller
 * has consumed the previous one (a caller that stops early sends nothing more). Starts at
 * `cursor` when given. `fetchPage` may return more than `{ data, nextCursor }` (e.g. when it read
 * the page); the page is yielded as returned. A cursor the API has already handed back fails the
 * walk (`createCursorGuard`).
 */
export async function* paginatePages<P extends { nextCursor: string | null }>(
  fetchPage: (cursor: string | undefined) => Promise<P>,
  cursor?: string,
): AsyncGenerator<P, void, undefined> {
  const guard = createCursorGuard(cursor);
  for (let pages = 1; ; pages++) {
    const page = await fetchPage(cursor);
    yield page;
    if (page.nextCursor === null) return;
    guard.next(page.nextCursor, pages);
    cursor = page.nextCursor;
  }
}

/** Every item of a cursor-paginated list, through `paginatePages` (same guard). */
export async function* paginate<T>(
  fetchPage: (cursor: string | undefined) => Promise<Page<T>>,
  cursor?: string,
): AsyncGenerator<T, void, undefined> {
  for await (const page of paginatePages(fetchPage, cursor)) yield* page.data;
}
