import type { Job, Queue } from "bullmq";
import { DEFAULT_ACCOUNT } from "../config/defaults.js";
import { cutAt, printable } from "../base/text.js";

// The jobs a queue gave up on (BullMQ's failed set, kept for KEEP_FAILED_SECONDS) as an operator
// reads them: `replay list` prints them, the console's Failures page shows the sync queue's beside
// the handlers' failure groups. One reading, so both name the same account, job and cause.

/** One failed job: which, whose, what it was doing and why it was given up. */
export interface FailedJob {
  /** The queue it failed in (events, sync). */
  queue: string;
  /** BullMQ's job id (what `replay <job-id> --queue <queue>` moves back). */
  job: string;
  /** The job's name: an event type on the events queue, the sync job (refresh, reconcile-full, …) on the sync queue. */
  name: string;
  /** The account whose job it is (`default` when the data names none). */
  account: string;
  /** The kind a sync job read, when its data names one. */
  kind?: string;
  /** The event an events-queue job carries. */
  event?: string;
  attempts: number;
  /** Its last failure's message, printable and bounded. */
  reason: string;
  /** When it failed for good (BullMQ's finishedOn); undefined when BullMQ kept no time. */
  failedAt?: Date;
}

/** How much of a failure's message a listing keeps. */
const REASON_CHARS = 500;

/** How many failed jobs one reading looks at (the newest first); past it the answer says `more`. */
export const FAILED_JOBS_READ = 1000;

const text = (value: unknown) => (typeof value === "string" && value !== "" ? value : undefined);

/** A failed job as the operator reads it. */
export function failedJobOf(job: Job): FailedJob {
  const data = (job.data ?? {}) as { id?: unknown; account?: unknown; kind?: unknown };
  const kind = text(data.kind);
  const event = text(data.id);
  return {
    queue: job.queueName,
    job: job.id ?? "-",
    name: job.name,
    account: text(data.account) ?? DEFAULT_ACCOUNT,
    ...(kind !== undefined ? { kind } : {}),
    ...(event !== undefined ? { event } : {}),
    attempts: job.attemptsMade,
    reason: printable(cutAt(job.failedReason, REASON_CHARS)),
    ...(job.finishedOn ? { failedAt: new Date(job.finishedOn) } : {}),
  };
}

/**
 * The failed jobs of a queue, newest first, of one account when `account` is given (else every
 * account's), among the newest FAILED_JOBS_READ; `more`: the failed set holds jobs past those.
 */
export async function listFailedJobs(
  queue: Pick<Queue, "getFailed" | "getFailedCount">,
  options: { account?: string | undefined; read?: number } = {},
): Promise<{ jobs: FailedJob[]; more: boolean }> {
  const read = options.read ?? FAILED_JOBS_READ;
  const [jobs, total] = await Promise.all([queue.getFailed(0, read - 1), queue.getFailedCount()]);
  const all = jobs.map(failedJobOf);
  return { jobs: options.account === undefined ? all : all.filter((j) => j.account === options.account), more: total > jobs.length };
}
