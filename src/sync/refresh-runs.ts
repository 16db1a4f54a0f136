import type { Queue } from "bullmq";
import type { Cluster, Redis } from "ioredis";
import type { RedisKeys } from "../redis/redis.js";
import type { SyncedKind } from "./resources.js";

/** The data of a kind's one refresh job (RefreshRuns.runWithin). */
export interface RefreshJobData {
  kind: SyncedKind;
  /**
   * Epoch ms the job was asked to run at: what a later ask compares with (a job BullMQ adds as the
   * running one ends counts its delay from that end, a few ms late, and would be replaced by every
   * ask).
   */
  runAt?: number;
}

/** When a kind's refresh runs: its one BullMQ job, and the budget's pace between runs. */
export interface RefreshRuns {
  /**
   * Makes sure a refresh of the kind starts within `delayMs`, and no sooner than its pace (`pace`),
   * with one BullMQ job per kind (a burst of events of every restaurant shares its reads): the
   * deduplication key is held from the job's add until it ends (`keepLastIfActive`), so at most one
   * job of the kind runs, and one waits. Asked while the job runs: BullMQ adds the next one as it
   * ends (the last ask's delay), so a change noted after the run read past its record always gets a
   * run of its own. Asked while one waits: it joins that one, brought forward if it would start
   * later (a backoff's wait). A job whose process died keeps the key and runs again once BullMQ
   * finds it stalled (its lock, JOB_LOCK_MS, lapsed).
   */
  runWithin(kind: SyncedKind, delayMs: number): Promise<void>;
  /**
   * No run of the kind starts before `paceMs` from now (the budget's pace, set by each run as it
   * ends): every ask until then, an event's too, is made for then, whether a job waits or not.
   */
  pace(kind: SyncedKind, paceMs: number): Promise<void>;
  /** Whether `jobId` is the kind's one job (holds its deduplication key): only it reads. */
  holds(kind: SyncedKind, jobId: string): Promise<boolean>;
}

const dedupId = (kind: SyncedKind) => `refresh-${kind}`;

export function createRefreshRuns(opts: {
  redis: Redis | Cluster;
  queue: Queue<RefreshJobData>;
  keys: Pick<RedisKeys, "refreshPace">;
}): RefreshRuns {
  // Wall-clock time, as BullMQ's delays are: the pace and the job's delay are compared directly.
  const { redis, queue, keys } = opts;
  const notBefore = async (kind: SyncedKind) => Number((await redis.get(keys.refreshPace(kind))) ?? 0);
  return {
    runWithin: (kind, delayMs) => runRefreshWithin(queue, kind, delayMs, () => notBefore(kind)),
    async pace(kind, paceMs) {
      if (paceMs > 0) await redis.set(keys.refreshPace(kind), String(Date.now() + paceMs), "PX", Math.ceil(paceMs));
    },
    async holds(kind, jobId) {
      return (await queue.getDeduplicationJobId(dedupId(kind))) === jobId;
    },
  };
}

/** RefreshRuns.runWithin. */
async function runRefreshWithin(
  queue: Queue<RefreshJobData>,
  kind: SyncedKind,
  delayMs: number,
  notBefore: () => Promise<number>,
): Promise<void> {
  const deduplication = { id: dedupId(kind), keepLastIfActive: true };
  const askedAt = Date.now() + Math.max(0, Math.ceil(delayMs));
  const runAt = Math.max(askedAt, await notBefore());
  const add = (at: number, replace = false) =>
    queue.add("refresh", { kind, runAt: at }, { delay: Math.max(0, at - Date.now()), deduplication: { ...deduplication, replace } });
  const added = await add(runAt);
  const job = added.id === undefined ? undefined : await queue.getJob(added.id);
  if (!job) return;
  // Joined the running job, whose next run BullMQ adds from the last ask made while it runs: if the
  // run set its pace after this ask read it, this ask (perhaps the last) is made again for then.
  if (job.processedOn !== undefined && job.finishedOn === undefined) {
    const paced = Math.max(askedAt, await notBefore());
    if (paced > runAt) await add(paced);
    return;
  }
  // Joined a job that waits longer than asked (a backoff's wait): replaced in one script by one due
  // as asked, if it still waits (BullMQ's replace mode touches delayed jobs only), never before the
  // pace.
  if ((job.data.runAt ?? job.timestamp + job.delay) > runAt) await add(runAt, true);
}
