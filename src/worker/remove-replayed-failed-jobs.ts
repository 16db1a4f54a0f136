import type { Queue } from "bullmq";

/** Failed jobs read per call while looking for an event's. */
const PAGE = 200;

/**
 * Removes the failed jobs (BullMQ's dead letters) of these events from `queue`: once a replay
 * took an event over, retrying its old failed job by hand (`replay <job-id>`, bull-board's
 * "retry") would run its handlers once more. The event log keeps each attempt's outcome and
 * stack, so nothing is lost. Returns the ids of the removed jobs.
 *
 * The failed set is bounded by KEEP_FAILED_JOBS, so one pass over it is bounded too.
 */
export async function removeReplayedFailedJobs(queue: Pick<Queue, "getFailed" | "remove">, eventIds: Iterable<string>): Promise<string[]> {
  const wanted = new Set(eventIds);
  if (wanted.size === 0) return [];
  const matching: string[] = [];
  for (let start = 0; ; start += PAGE) {
    const jobs = await queue.getFailed(start, start + PAGE - 1);
    for (const job of jobs) {
      const data = job.data as { id?: unknown } | undefined;
      if (job.id && typeof data?.id === "string" && wanted.has(data.id)) matching.push(job.id);
    }
    if (jobs.length < PAGE) break;
  }
  // Removed after the walk, so removing does not shift the pages being read.
  for (const id of matching) await queue.remove(id);
  return matching;
}
