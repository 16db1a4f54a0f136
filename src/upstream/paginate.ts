import { UpstreamResponseError } from "./errors.js";
import type { Page } from "./models.js";

/**
 * Every page of a cursor-paginated list, in order, fetching the next page only when the caller
 * has consumed the previous one (a caller that stops early sends nothing more). Starts at
 * `cursor` when given. `fetchPage` may return more than `{ data, nextCursor }` (e.g. when it read
 * the page); the page is yielded as returned.
 *
 * A cursor the API has already handed back would page forever (a stuck or cycling upstream), so
 * it is an invalid response: `UpstreamResponseError` with code `repeated_cursor`.
 */
export async function* paginatePages<P extends { nextCursor: string | null }>(
  fetchPage: (cursor: string | undefined) => Promise<P>,
  cursor?: string,
): AsyncGenerator<P, void, undefined> {
  const seen = new Set<string>(cursor === undefined ? [] : [cursor]);
  for (let pages = 1; ; pages++) {
    const page = await fetchPage(cursor);
    yield page;
    if (page.nextCursor === null) return;
    if (seen.has(page.nextCursor)) {
      throw new UpstreamResponseError(
        `the API handed back the same cursor again after ${pages} page(s): stopped a list that would never end`,
        {
          status: 200,
          code: "repeated_cursor",
        },
      );
    }
    seen.add(page.nextCursor);
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
