import type { Queue, Worker } from "bullmq";
import type { Logger } from "pino";
import type { StreamConsumer } from "../queue/stream-consumer.js";
import type { Deadline } from "../queue/deadline.js";
import type { ChangeRelay } from "./change-relay.js";
import type { GapWatch } from "./gap-watch.js";

/** The running parts of a worker role, in the order they start. */
export interface WorkerParts {
  logger: Logger;
  /** Runs before anything takes work: e.g. the step store's handler keys moved to the registry's names. */
  prepare(): Promise<void>;
  /** Makes the job schedulers. */
  schedule(): Promise<void>;
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

export interface WorkerLifecycle {
  start(): Promise<void>;
  /** Drains by `drain` (then aborts upstream reads and closes the workers anyway: their jobs rerun), closes by `close`. */
  stop(deadlines: StopDeadlines): Promise<void>;
}

/** Starts a worker's parts in order, and stops them within one shared deadline. */
export function workerLifecycle(parts: WorkerParts): WorkerLifecycle {
  const { logger, gapWatch, workers, streamConsumer, changeRelay } = parts;
  return {
    async start() {
      await parts.prepare();
      await parts.schedule();
      // Before the workers take jobs: after a gap, the catch-up is queued before the first active tick runs.
      await gapWatch.start();
      for (const w of workers) {
        w.run().catch((err: unknown) => logger.error({ err }, "worker stopped unexpectedly"));
      }
      await Promise.all(workers.map((w) => w.waitUntilReady()));
      await streamConsumer.start();
      changeRelay.start();
    },
    async stop({ drain, close }) {
      // At the drain's deadline a read the API holds ends (UpstreamAbortedError) and so does its job.
      const onDrained = () => parts.upstreamStop?.abort(new Error("the shutdown deadline passed"));
      drain.signal.addEventListener("abort", onDrained, { once: true });
      try {
        // Every part drains at once, each until the same deadline: none waits for what another left.
        // The gap watch's tick in hand enqueues its catch-up before the queues close (or never).
        const gap = drain.within(gapWatch.stop(), "the gap watch's tick").catch((err: unknown) => warn(logger, err));
        const stream = streamConsumer.stop(drain);
        const graceful = Promise.all(workers.map((w) => w.close()));
        const late = await drain.within(graceful, "the workers' active jobs").then(
          () => false,
          () => true,
        );
        if (late) {
          onDrained();
          logger.warn("active jobs did not finish before the shutdown deadline; they will run again");
          await close
            .within(Promise.all(workers.map((w) => w.close(true))), "closing the workers")
            .catch((err: unknown) => warn(logger, err));
        }
        await Promise.all([gap, stream]);
      } finally {
        drain.signal.removeEventListener("abort", onDrained);
      }
      // After the workers: a sync job finishing above may still record (and poke) changes.
      await changeRelay.stop(close);
      await close
        .within(Promise.all(parts.queues.map((q) => q.close())), "closing the worker's queues")
        .catch((err: unknown) => warn(logger, err));
    },
  };
}

const warn = (logger: Logger, err: unknown) => logger.warn({ err: (err as Error).message }, "going on with the shutdown");
