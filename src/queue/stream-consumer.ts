import { Cluster } from "ioredis";
import { type RedisClient, warnUnlessOutage } from "../redis/redis.js";
import type { InflightFigures } from "./inflight-entries.js";
import type { StreamConsumerOptions } from "./stream-consumer-options.js";
import { createStreamConsumerState } from "./stream-consumer-state.js";
import { createFirstAttempts } from "./stream-first-attempts.js";
import { ensureConsumerGroup, extendClaims, readLoop } from "./stream-read-loop.js";
import { deadlineIn, type Deadline } from "./with-timeout.js";

export interface StreamConsumer {
  start(): Promise<void>;
  /** Creates the consumer group (and the stream) unless it exists: after Redis lost its data. */
  ensureGroup(): Promise<void>;
  /**
   * Stops reading and starts no handler from then on: the entries read ahead and not started move
   * into the events queue at once; those running finish (handled, recorded, acknowledged) by the
   * shutdown's deadline (default 3 s from now), or stay pending for another consumer to claim.
   */
  stop(deadline?: Deadline): Promise<void>;
  /** True while some attempt of the runner this consumer shares waits for the event log (the database is away): for readiness. */
  waitingOnLog(): boolean;
  /** How many attempts (the stream's and the events queue's) wait for the event log to take them (metrics). */
  attemptsWaitingOnLog(): number;
  /** Entries (and their bytes) read and not yet acknowledged, and the most bytes held at once. */
  inflight(): InflightFigures;
}

/**
 * The worker's hot path and the stream's side of delivery: it decides where an event's first
 * attempt comes from (the ingest stream) and where the next goes (the events queue); the attempt
 * runner does the rest. It holds up to `batchSize` entries (and no more than `maxInflightBytes`),
 * reads with a consumer group whenever there is room (stream-read-loop.ts), runs the handlers of
 * `concurrency` events at once, and finishes each entry on its own (stream-first-attempts.ts): the
 * runner's attempt (recorded, group-committed with those that end alongside), the event's
 * continuation in the events queue if any, and only then the entry's acknowledgement. A slow or
 * hung handler holds one slot, never the stream; an event that succeeds first time costs no
 * BullMQ job.
 *
 * While an entry is in flight it is re-claimed (XCLAIM JUSTID) every third of `claimIdleMs`, as a
 * BullMQ worker extends its lock. A consumer that dies leaves its entries pending: after
 * `claimIdleMs` any consumer claims them (XAUTOCLAIM) and moves them into the events queue, where
 * they run again (at least once, as a crashed BullMQ job does), one job per entry however often
 * it is moved. While the event log is away, an attempt holds its entry: with every entry held,
 * nothing new is read, the stream grows, and the edge answers 503.
 */
export function createStreamConsumer(options: StreamConsumerOptions): StreamConsumer {
  const state = createStreamConsumerState(options);
  const { logger, inflight } = state;
  const attempts = createFirstAttempts(state);
  // Blocking reads get a connection of their own: they would hold up every command behind them.
  let reader: RedisClient | undefined;
  let running: Promise<void> | undefined;
  let heartbeat: NodeJS.Timeout | undefined;

  return {
    ensureGroup: () => ensureConsumerGroup(state),
    async start() {
      const connection = options.connection;
      const own: RedisClient = connection instanceof Cluster ? connection.duplicate() : connection.duplicate();
      reader = own;
      own.on("error", warnUnlessOutage(logger, "stream consumer connection error"));
      await ensureConsumerGroup(state);
      heartbeat = setInterval(() => extendClaims(state), Math.max(50, options.claimIdleMs / 3));
      heartbeat.unref();
      running = readLoop(state, own, (entry) => attempts.begin(entry));
    },
    async stop(deadline = deadlineIn(3000)) {
      state.stopping = true;
      state.stopped.abort();
      inflight.wake();
      // The blocking read returns within its BLOCK time, an entry once its handlers end (or their
      // deadline passes); if Redis is gone neither does: cut the reader loose after the deadline.
      // What was read and not acknowledged stays pending, and another consumer claims it.
      const finished = (async () => {
        await running;
        await attempts.releaseUnstarted();
        await inflight.whenEmpty();
      })();
      const late = await deadline.within(finished, "stop").then(
        () => false,
        () => true,
      );
      if (late) {
        logger.warn("stream consumer did not stop in time; its unacknowledged entries will be claimed by another consumer");
        reader?.disconnect();
      }
      clearInterval(heartbeat);
      // QUIT waits for a Redis that is away: only a ready reader is asked.
      if (reader?.status === "ready") await reader.quit().catch(() => reader?.disconnect());
      else reader?.disconnect();
    },
    waitingOnLog: () => options.runner.waitingOnLog() > 0,
    attemptsWaitingOnLog: () => options.runner.waitingOnLog(),
    inflight: () => inflight.figures(),
  };
}
