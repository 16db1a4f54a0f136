import { randomUUID } from "node:crypto";
import type { Queue } from "bullmq";
import type { EventLog, EventQuery, EventSummary, LoggedEvent } from "../mirror/event-log.js";
import type { EventJobData } from "../queue/events-queue.js";
import type { StepStore } from "../mirror/step-store.js";
import { EventLogError } from "../mirror/errors.js";
import { eventQueryFromParams, validateEventQuery } from "../mirror/event-log.js";

export interface ReplayOptions {
  /** Which logged events to replay (time range, type or family, status, handler outcome). */
  query: EventQuery;
  /** Run only this handler key on each replayed event (the others count as done). */
  handler?: string | undefined;
  /** Count and report, queue nothing. */
  dryRun?: boolean;
  /**
   * Forget the events' durable steps in this store (of `handler` only, when given) before queuing
   * them, so the replay runs every step again instead of returning the stored results (--fresh).
   */
  fresh?: Pick<StepStore, "forget">;
  /** The bulk replay these jobs belong to (its progress counts them as they end). */
  bulk?: string;
  /**
   * Removes what BullMQ still holds of the replayed events (their failed jobs), page by page, so
   * a later retry of a failed job cannot run a handler the replay already ran.
   */
  removeFailedJobs?: (eventIds: readonly string[]) => Promise<unknown>;
  /** Asked before each event is queued: true ends the replay there (a bulk replay's cancel). */
  stop?: () => Promise<boolean>;
  /** Called after each page with the running count (a progress bar, a log line). */
  onProgress?: (count: number, page: readonly EventSummary[]) => void;
}

const PAGE = 500;
/** Payload bytes queued per addBulk: a page of 1 MB events is sent in parts, not held whole. */
const BATCH_BYTES = 8 * 1024 * 1024;

/**
 * Queues logged events again as deliberate redeliveries: each gets a fresh job id and no
 * deduplication, so the edge's window does not drop it. Returns how many it queued (or would).
 */
export async function replayEvents(
  deps: { eventLog: Pick<EventLog, "query" | "get">; queue: Queue<EventJobData> | undefined },
  options: ReplayOptions,
): Promise<number> {
  let count = 0;
  let cursor: string | undefined;
  do {
    const page = await deps.eventLog.query({ ...options.query, limit: PAGE, ...(cursor ? { cursor } : {}) });
    if (options.fresh && !options.dryRun)
      await options.fresh.forget(
        page.data.map((event) => event.id),
        options.handler,
      );
    if (!options.dryRun && page.data.length > 0) {
      if (!deps.queue) throw new Error("replayEvents needs a queue unless dryRun is set");
      await options.removeFailedJobs?.(page.data.map((event) => event.id));
      const queued = await queuePage(deps.eventLog, deps.queue, page.data, options, count);
      count += queued.count;
      if (queued.stopped) return count;
    } else count += page.data.length;
    options.onProgress?.(count, page.data);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return count;
}

/**
 * Lists carry no payloads: each event is read whole, and the jobs go to the queue in batches of
 * at most BATCH_BYTES of payload. An event pruned since the list was read is skipped (not counted).
 * A bulk replay's jobs are numbered from `first` (see replayJob).
 */
async function queuePage(
  eventLog: Pick<EventLog, "get">,
  queue: Queue<EventJobData>,
  page: readonly EventSummary[],
  options: Pick<ReplayOptions, "handler" | "bulk" | "stop">,
  first: number,
): Promise<{ count: number; stopped: boolean }> {
  let batch: ReturnType<typeof replayJob>[] = [];
  let bytes = 0;
  let queued = 0;
  const flush = async () => {
    if (batch.length > 0) await queue.addBulk(batch);
    queued += batch.length;
    batch = [];
    bytes = 0;
  };
  for (const summary of page) {
    if (await options.stop?.()) {
      await flush();
      return { count: queued, stopped: true };
    }
    const event = await eventLog.get(summary.id);
    if (!event) continue;
    batch.push(replayJob(event, { ...options, sequence: first + queued + batch.length }));
    bytes += JSON.stringify(event.payload).length;
    if (bytes >= BATCH_BYTES) await flush();
  }
  await flush();
  return { count: queued, stopped: false };
}

/**
 * The query a replay by filter runs: `handler` selects the events on which that handler failed
 * (and the replay runs only it). The same parser as GET /events: strict, a bad value throws
 * invalid_filter naming the field.
 */
export function replayQueryFromFilter(filter: Record<string, string | undefined>): EventQuery {
  const params: Record<string, string> = {};
  for (const [name, value] of Object.entries(filter)) if (value !== undefined) params[name] = value;
  if (params.handler !== undefined) params.handlerStatus = "failed";
  for (const name of ["limit", "cursor", "handlerStatus"] as const)
    if (name in filter)
      throw new EventLogError(
        "invalid_filter",
        name,
        `a replay filter takes type, status, handler, fingerprint, since, until; not ${name}`,
      );
  const query = eventQueryFromParams(params);
  // Checked now (statuses, type patterns), not when the first page is read: a bad value is the caller's error.
  validateEventQuery(query);
  return query;
}

/**
 * A replay job of one logged event: a fresh job id, no deduplication (a deliberate redelivery).
 * A bulk replay's jobs are `<bulk id>-<n>` (n from 0 in the order queued), so a cancel can find
 * the ones still waiting without reading the queue.
 */
export function replayJob(
  event: Pick<LoggedEvent, "id" | "type" | "payload">,
  options: Pick<ReplayOptions, "handler" | "bulk"> & { sequence?: number } = {},
) {
  const { handler, bulk, sequence } = options;
  const data: EventJobData = {
    id: event.id,
    type: event.type,
    receivedAt: new Date().toISOString(),
    payload: event.payload as Record<string, unknown>,
    // A run of its own: attempt 1 of JOB_ATTEMPTS, replay k in the log (attempt-runner.ts' attemptOfJob).
    replay: true,
    ...(handler ? { only: [handler] } : {}),
    ...(bulk ? { bulk } : {}),
  };
  const jobId = bulk !== undefined && sequence !== undefined ? bulkReplayJobId(bulk, sequence) : `replay-${randomUUID()}`;
  return { name: event.type, data, opts: { jobId } };
}

export function bulkReplayJobId(bulk: string, sequence: number): string {
  return `${bulk}-${sequence}`;
}
