import type { Queue, Worker } from "bullmq";
import type { Logger } from "pino";
import type { StreamConsumer } from "../queue/stream-consumer.js";
import type { Deadline } from "../base/deadline.js";
import type { ChangeRelay } from "./change-feed.js";
import type { SyncCheckpoints } from "../mirror/sync-checkpoints.js";
import { type RedisClient, redisKeys } from "../redis/redis.js";

/** The running parts of a worker role, in the order they start. */
export interface WorkerParts {
  logger: Logger;
  /** Runs before anything takes work: e.g. the step store's handler keys moved to the registry's names. */
  prepare(): Promise<void>;
  /** Makes the job schedulers. */
  schedule(): Promise<void>;
  /** Enqueues again the events the log holds as waiting for a retry whose jobs Redis lost (events-queue.ts createJobRestorer). */
  heal(): Promise<void>;
  gapWatch: GapWatch;
  /** The BullMQ workers (events, sync). */
  workers: readonly Worker[];
  streamConsumer: StreamConsumer;
  changeRelay: ChangeRelay;
  /** The queue handles the role owns, closed last. */
  queues: readonly Queue[];
  /** Aborted when the drain's deadline passes: the upstream client's signal, so a hung read ends the job holding it. */
  upstreamStop?: AbortController;
}

/**
 * The two deadlines of a stop: `drain` for the work in hand (stream entries, jobs, the gap watch's
 * tick), `close` (later) for what must still be closed after it (the relay's batch, the queues).
 */
export interface StopDeadlines {
  drain: Deadline;
  close: Deadline;
}

/** Starts a worker's parts in order, and stops them within one shared deadline. */
export function workerLifecycle(parts: WorkerParts) {
  const { logger, gapWatch, workers, streamConsumer, changeRelay } = parts;
  /** `work` by `deadline`; past it, or failed, the shutdown goes on (logged). */
  const bounded = (deadline: Deadline, work: Promise<unknown>, what: string) =>
    deadline.within(work, what).catch((err: unknown) => logger.warn({ err: (err as Error).message }, "going on with the shutdown"));
  return {
    async start() {
      await parts.prepare();
      await parts.schedule();
      // Before the workers take jobs: after a gap, the catch-up is queued before the first active tick runs.
      await gapWatch.start();
      // Also when Redis kept its data (a job lost any other way is found too); after the gap watch's
      // first tick, and skipped when that tick's own heal (Redis found emptied) ran. A heal that
      // fails here (the database away) does not stop the start: the next start or loss heals again.
      await parts
        .heal()
        .catch((err: unknown) => logger.warn({ err: (err as Error).message }, "could not enqueue waiting events again from the event log"));
      for (const w of workers) {
        w.run().catch((err: unknown) => logger.error({ err }, "worker stopped unexpectedly"));
      }
      await Promise.all(workers.map((w) => w.waitUntilReady()));
      await streamConsumer.start();
      changeRelay.start();
    },
    /** Drains by `drain` (then aborts upstream reads and closes the workers anyway: their jobs rerun), closes by `close`. */
    async stop({ drain, close }: StopDeadlines): Promise<void> {
      // At the drain's deadline a read the API holds ends (UpstreamAbortedError) and so does its job.
      const onDrained = () => parts.upstreamStop?.abort(new Error("the shutdown deadline passed"));
      drain.signal.addEventListener("abort", onDrained, { once: true });
      try {
        // Every part drains at once, each until the same deadline: none waits for what another left.
        // The gap watch's tick in hand enqueues its catch-up before the queues close (or never).
        const gap = bounded(drain, gapWatch.stop(), "the gap watch's tick");
        const stream = streamConsumer.stop(drain);
        const graceful = Promise.all(workers.map((w) => w.close()));
        if (await drain.missed(graceful, "the workers' active jobs")) {
          onDrained();
          logger.warn("active jobs did not finish before the shutdown deadline; they will run again");
          await bounded(close, Promise.all(workers.map((w) => w.close(true))), "closing the workers");
        }
        await Promise.all([gap, stream]);
      } finally {
        drain.signal.removeEventListener("abort", onDrained);
      }
      // After the workers: a sync job finishing above may still record (and poke) changes.
      await changeRelay.stop(close);
      await bounded(close, Promise.all(parts.queues.map((q) => q.close())), "closing the worker's queues");
    },
  };
}

/**
 * How old the workers' liveness mark may be before a worker calls it a gap: twice the watch's
 * interval (one late tick is no gap), at least 30 s (a deploy's rolling restart is none either).
 */
export const gapThresholdMs = (intervalMs: number) => Math.max(30_000, 2 * intervalMs);

export interface GapWatchOptions {
  redis: RedisClient;
  prefix: string;
  /** The liveness mark lives in PostgreSQL: it outlives Redis losing its data. */
  checkpoints: Pick<SyncCheckpoints, "markAlive">;
  intervalMs: number;
  /**
   * Recreates what the worker keeps in Redis and Redis cannot keep by itself once emptied: the
   * job schedulers, the ingest stream's consumer group (the same call the worker starts with) and
   * the jobs of the events the log holds as waiting for a retry.
   */
  restore: () => Promise<void>;
  /** Enqueues one catch-up for a gap that began at `gapStart`; absent when this worker does not sync. */
  catchUp?: (gapStart: Date) => Promise<void>;
  logger: Logger;
}

export type GapWatch = ReturnType<typeof createGapWatch>;

/**
 * The workers' view of their own absence. Webhooks are not redelivered (the spec shows no
 * redelivery), so while every worker was stopped, or Redis lost the stream and the pending ids,
 * changes went unseen: the next worker to tick finds the mark old, or the sentinel missing, and
 * enqueues a catch-up pass from the gap's start.
 */
export function createGapWatch(options: GapWatchOptions) {
  const { redis, logger } = options;
  const { workersAlive: sentinel, restoringRedis } = redisKeys(options.prefix);
  const threshold = gapThresholdMs(options.intervalMs);
  let timer: NodeJS.Timeout | undefined;
  // A gap whose catch-up could not be enqueued yet (Redis failed just then): the mark no longer shows it.
  let owed: Date | undefined;

  let stopped = false;
  let inFlight: Promise<unknown> | undefined;

  /** Marks the workers alive and looks for a gap (the mark old, or Redis emptied); restores and catches up. */
  function tick(): Promise<{ gapStart?: Date; redisEmptied: boolean }> {
    const run = tickOnce();
    inFlight = run.catch(() => undefined);
    return run;
  }

  async function tickOnce(): Promise<{ gapStart?: Date; redisEmptied: boolean }> {
    // A timer's tick that fires as the worker stops finds nothing to do.
    if (stopped) return { redisEmptied: false };
    // Missing while the mark exists: Redis was emptied (restart without persistence, FLUSHALL,
    // failover to an empty replica). Read before marking: while Redis is away nothing is marked,
    // so an outage longer than the threshold is a gap once it ends.
    const redisEmptied = (await redis.exists(sentinel)) === 0;
    // One worker restores (several upserting one job scheduler at once has had bugs in BullMQ); the
    // others look again next tick. The TTL hands it on if that worker dies meanwhile.
    if (redisEmptied && (await redis.set(restoringRedis, "1", "PX", threshold, "NX")) !== "OK") return { redisEmptied: false };
    // Locked: of workers marking together, only the first sees the old mark.
    const { previous, now } = await options.checkpoints.markAlive();
    if (redisEmptied) await options.restore();
    const gap = previous !== undefined && (redisEmptied || now.getTime() - previous.getTime() > threshold);
    // From a little before the last mark: events Redis held unhandled then are gone with it.
    const found = gap ? new Date(previous.getTime() - threshold) : undefined;
    const gapStart = found && owed ? new Date(Math.min(found.getTime(), owed.getTime())) : (found ?? owed);
    if (gapStart && options.catchUp) {
      owed = gapStart;
      logger.warn({ lastSeen: previous, gapStart, redisEmptied }, "workers were away or Redis lost its data: catching up");
      await options.catchUp(gapStart);
      owed = undefined;
    }
    // Set again only once restored and caught up: a crash in between leaves it to the next tick.
    if (redisEmptied) {
      await redis.set(sentinel, now.toISOString());
      await redis.del(restoringRedis);
    }
    return { ...(gapStart ? { gapStart } : {}), redisEmptied: redisEmptied && previous !== undefined };
  }

  let ticking = false;
  // A failed tick (the database or Redis away) leaves the mark as it was: a long outage is a gap.
  const tickLogged = async () => {
    if (ticking) return;
    ticking = true;
    await tick()
      .catch((err: unknown) => logger.warn({ err: (err as Error).message }, "gap watch tick failed; the next tick retries"))
      .finally(() => (ticking = false));
  };

  return {
    tick,
    /** Ticks now and then every `intervalMs` (a plain timer: the job schedulers may be what was lost). */
    async start(): Promise<void> {
      await tickLogged();
      timer = setInterval(() => void tickLogged(), options.intervalMs);
      timer.unref();
    },
    /**
     * Ticks no more, and waits for the tick in flight: nothing is restored or enqueued once it
     * resolves (the queues close after it). A tick runs to its end rather than stop halfway: once
     * it has moved the liveness mark, the gap it found is known nowhere else.
     */
    async stop(): Promise<void> {
      stopped = true;
      clearInterval(timer);
      await inFlight;
    },
  };
}

/**
 * Deletes events received more than `retentionDays` ago, in batches, so no statement holds a long
 * lock or a large transaction; returns how many went. Run hourly by the sync queue's scheduler.
 */
export async function pruneEventLog(
  log: { prune(olderThan: Date, batchSize?: number): Promise<number> },
  retentionDays: number,
  batchSize = 500,
): Promise<number> {
  const olderThan = new Date(Date.now() - retentionDays * 24 * 3600 * 1000);
  let total = 0;
  for (;;) {
    const deleted = await log.prune(olderThan, batchSize);
    total += deleted;
    if (deleted < batchSize) return total;
  }
}
