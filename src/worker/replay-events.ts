import { randomUUID } from "node:crypto";
import type { Queue } from "bullmq";
import type { EventLog, EventQuery, LoggedEvent } from "../mirror/event-log.js";
import type { EventJobData } from "../queue/event-job.js";

export interface ReplayOptions {
  /** Which logged events to replay (time range, type or family, status, handler outcome). */
  query: EventQuery;
  /** Run only this handler key on each replayed event (the others count as done). */
  handler?: string | undefined;
  /** Count and report, queue nothing. */
  dryRun?: boolean;
  /** Called after each page with the running count (a progress bar, a log line). */
  onProgress?: (count: number, page: readonly LoggedEvent[]) => void;
}

const PAGE = 500;

/**
 * Queues logged events again as deliberate redeliveries: each gets a fresh job id and no
 * deduplication, so the edge's window does not drop it. Returns how many it queued (or would).
 */
export async function replayEvents(
  deps: { eventLog: Pick<EventLog, "query">; queue: Queue<EventJobData> | undefined },
  options: ReplayOptions,
): Promise<number> {
  let count = 0;
  let cursor: string | undefined;
  do {
    const page = await deps.eventLog.query({ ...options.query, limit: PAGE, ...(cursor ? { cursor } : {}) });
    if (!options.dryRun && page.data.length > 0) {
      if (!deps.queue) throw new Error("replayEvents needs a queue unless dryRun is set");
      await deps.queue.addBulk(page.data.map((event) => replayJob(event, options.handler)));
    }
    count += page.data.length;
    options.onProgress?.(count, page.data);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return count;
}

function replayJob(event: LoggedEvent, handler: string | undefined) {
  const data: EventJobData = {
    id: event.id,
    type: event.type,
    receivedAt: new Date().toISOString(),
    payload: event.payload as Record<string, unknown>,
    ...(handler ? { only: [handler] } : {}),
  };
  return { name: event.type, data, opts: { jobId: `replay-${randomUUID()}` } };
}
