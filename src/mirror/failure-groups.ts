import { sql, type Kysely } from "kysely";
import type { DatabaseSchema } from "./database-schema.js";
import { withOperatorTimeout } from "./operator-query-timeout-error.js";

/** Failed handler outcomes of one handler with one error fingerprint, over a time range. */
export interface FailureGroup {
  handler: string;
  /**
   * What the group's errors share: the first line with ids, numbers, times and hex masked
   * (error-fingerprint.ts). Outcomes logged before fingerprints were stored group by their first line.
   */
  fingerprint: string;
  /** Whether every outcome of the group has the fingerprint stored: only then does a fingerprint filter (GET /events, replays) select all of them. */
  fingerprinted: boolean;
  /** An example: the newest event's error, its first line cut to FAILURE_MESSAGE_LENGTH characters. */
  error: string;
  /** `failed`: given up on (dead letters); `received`: the last attempt failed and the job will retry. */
  status: "failed" | "received";
  events: number;
  firstAt: Date;
  lastAt: Date;
  /** One event of the group (the newest), to open. */
  sampleId: string;
}

export const FAILURE_MESSAGE_LENGTH = 200;
/** Groups returned at most (largest first). */
export const MAX_FAILURE_GROUPS = 100;

interface GroupRow {
  handler: string;
  fingerprint: string | null;
  fingerprinted: boolean;
  error: string | null;
  status: "failed" | "received";
  events: string | number;
  first_at: Date;
  last_at: Date;
  sample_id: string;
}

/**
 * What failed or is retrying in [since, until), grouped by handler, error fingerprint and event
 * status, largest group first: an event whose handler keeps failing with the same error counts
 * once in that group, and errors that differ only in the ids they name are one group. Reads only events whose status is failed or received (a received row is one whose
 * last attempt failed: the log records an attempt when it ends), through the received_at index.
 */
export async function listFailureGroups(
  db: Kysely<DatabaseSchema>,
  range: { since: Date; until?: Date | undefined },
  timeoutMs: number,
): Promise<FailureGroup[]> {
  const until = range.until ? sql`and e.received_at < ${range.until}::timestamptz` : sql``;
  const message = sql`left(split_part(coalesce(h.value ->> 'error', ''), chr(10), 1), ${FAILURE_MESSAGE_LENGTH})`;
  const { rows } = await withOperatorTimeout(timeoutMs, () =>
    sql<GroupRow>`select h.key as handler, coalesce(h.value ->> 'fingerprint', ${message}) as fingerprint,
        bool_and(h.value ? 'fingerprint') as fingerprinted, (array_agg(${message} order by e.received_at desc))[1] as error,
        e.status as status, count(*) as events,
        min(e.received_at) as first_at, max(e.received_at) as last_at, (array_agg(e.id order by e.received_at desc))[1] as sample_id
      from events e cross join lateral jsonb_each(e.handlers) as h
      where e.status in ('failed', 'received') and e.received_at >= ${range.since}::timestamptz ${until}
        and h.value ->> 'status' = 'failed'
      group by 1, 2, e.status order by count(*) desc, max(e.received_at) desc limit ${MAX_FAILURE_GROUPS}`.execute(db),
  );
  return rows.map((r) => ({
    handler: r.handler,
    fingerprint: r.fingerprint ?? "",
    fingerprinted: r.fingerprinted,
    error: r.error ?? "",
    status: r.status,
    events: Number(r.events),
    firstAt: new Date(r.first_at),
    lastAt: new Date(r.last_at),
    sampleId: r.sample_id,
  }));
}
