import { randomUUID } from "node:crypto";
import type { Queue } from "bullmq";
import type { EventLog, EventQuery, EventSummary, LoggedEvent } from "../mirror/event-log.js";
import type { EventJobData } from "../queue/event-job.js";
import type { StepStore } from "../mirror/step-store.js";

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
      count += await queuePage(deps.eventLog, deps.queue, page.data, options.handler);
    } else count += page.data.length;
    options.onProgress?.(count, page.data);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return count;
}

/**
 * Lists carry no payloads: each event is read whole, and the jobs go to the queue in batches of
 * at most BATCH_BYTES of payload. An event pruned since the list was read is skipped (not counted).
 */
async function queuePage(
  eventLog: Pick<EventLog, "get">,
  queue: Queue<EventJobData>,
  page: readonly EventSummary[],
  handler: string | undefined,
): Promise<number> {
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
    const event = await eventLog.get(summary.id);
    if (!event) continue;
    batch.push(replayJob(event, handler));
    bytes += JSON.stringify(event.payload).length;
    if (bytes >= BATCH_BYTES) await flush();
  }
  await flush();
  return queued;
}

function replayJob(event: LoggedEvent, handler: string | undefined) {
  const data: EventJobData = {
    id: event.id,
    type: event.type,
    receivedAt: new Date().toISOString(),
    payload: event.payload as Record<string, unknown>,
    replay: true,
    ...(handler ? { only: [handler] } : {}),
  };
  return { name: event.type, data, opts: { jobId: `replay-${randomUUID()}` } };
}
