import type * as z from "zod";
import type { ApiCall } from "./api-call.js";
import { UpstreamPageRefusedError, UpstreamRequestError } from "./errors.js";
import type { ListOptions, ReadPage } from "./list-queries.js";
import { looseRecordsPageSchema, splitRecords } from "./models.js";
import { paginate } from "./paginate.js";

/** The spec's page size bound (part 8): also what a page without `limit` may hold at most. */
const MAX_LIMIT = 100;

const checkLimit = (limit: number | undefined) => {
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)) {
    throw new UpstreamRequestError(`limit must be a whole number from 1 to ${MAX_LIMIT}, not ${limit}`);
  }
};

/** One list of the API: a page (`list`) and every page in turn (`iterate`), its records checked one by one. */
export function listReader<T, Q extends { limit?: number; cursor?: string }>(
  send: <V>(call: ApiCall<V>) => Promise<{ value: V; sentAt: Date }>,
  path: string,
  schema: z.ZodType<T>,
  toParams: (query: Q) => Record<string, string | number | undefined> = (query) => query,
) {
  const list = async (query: Q = {} as Q, opts: ListOptions = {}): Promise<ReadPage<T>> => {
    checkLimit(query.limit);
    const pages = looseRecordsPageSchema;
    const { value, sentAt } = await send({
      method: "GET",
      path,
      route: path,
      query: toParams(query),
      schema: pages,
      priority: opts.priority,
      clock: opts.clock,
      signal: opts.signal,
    });
    // More than asked for is not a page of this list (and memory sized for `limit` records).
    const asked = query.limit ?? MAX_LIMIT;
    if (value.data.length > asked)
      throw new UpstreamPageRefusedError(`GET ${path} answered ${value.data.length} records for limit ${asked}: refused the page`, {
        code: "page_over_limit",
      });
    // Each record on its own: one the spec's shape does not fit is set aside, not the whole page.
    return { ...splitRecords(schema, value.data), nextCursor: value.nextCursor, readAt: sentAt };
  };
  const iterate = (query: Omit<Q, "cursor"> = {} as Q, opts: ListOptions = {}) =>
    paginate((cursor) => list({ ...query, ...(cursor ? { cursor } : {}) } as Q, opts));
  return { list, iterate };
}
