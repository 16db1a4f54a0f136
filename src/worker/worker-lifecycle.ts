import type { Queue, Worker } from "bullmq";
import type { Logger } from "pino";
import type { StreamConsumer } from "../queue/stream-consumer.js";
import { withTimeout } from "../queue/with-timeout.js";
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
}

export interface WorkerLifecycle {
  start(): Promise<void>;
  /** Waits for active jobs up to `deadlineMs`, then closes anyway (their locks expire and they rerun). */
  stop(deadlineMs: number): Promise<void>;
}

/** Starts a worker's parts in order, and stops them within a deadline. */
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
    async stop(deadlineMs) {
      // The stream first: the batch in hand is handled, recorded and acknowledged (or left pending
      // for another consumer if it cannot be within the deadline).
      const started = Date.now();
      gapWatch.stop();
      await streamConsumer.stop(deadlineMs);
      deadlineMs = Math.max(0, deadlineMs - (Date.now() - started));
      const graceful = Promise.all(workers.map((w) => w.close()));
      const late = await withTimeout(graceful, deadlineMs, "stop").then(
        () => false,
        () => true,
      );
      if (late) {
        logger.warn("active jobs did not finish before the shutdown deadline; they will run again");
        await Promise.all(workers.map((w) => w.close(true)));
      }
      // After the workers: a sync job finishing above may still record (and poke) changes.
      await changeRelay.stop();
      await Promise.all(parts.queues.map((q) => q.close()));
    },
  };
}
