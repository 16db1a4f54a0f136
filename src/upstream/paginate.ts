import { UpstreamResponseError } from "./errors.js";
import type { Page } from "./models.js";

/**
 * Every item of a cursor-paginated list, page after page, fetching the next page only when the
 * caller has consumed the previous one. Starts at `cursor` when given. A cursor the API hands
 * back unchanged would loop forever, so it is an invalid response.
 */
export async function* paginate<T>(fetchPage: (cursor: string | undefined) => Promise<Page<T>>, cursor?: string): AsyncGenerator<T, void, undefined> {
  for (;;) {
    const page = await fetchPage(cursor);
    yield* page.data;
    if (page.nextCursor === null) return;
    if (page.nextCursor === cursor) throw new UpstreamResponseError(`the API returned the same nextCursor twice`, { status: 200 });
    cursor = page.nextCursor;
  }
}
