import type { Queue } from "bullmq";
import { ownData } from "../config/defaults.js";
import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import type { Metrics } from "../metrics/metrics.js";
import { createMirrorWriter, type ChangeOutbox, type OutboxRow } from "../mirror/change-outbox.js";
import type { MirrorStore } from "../mirror/mirror-store.js";
import type { EventJobData } from "../queue/events-queue.js";
import { changeJobIdentity } from "../queue/job-ids.js";
import { activeTraceparent, type Tracing, relaySpans } from "../tracing/tracing.js";
import type { Tracer } from "@opentelemetry/api";
import { defaultStopDeadline, type Deadline } from "../base/deadline.js";
import type { ListensToChange } from "../events/change-listeners.js";

/** Change events: recorded with each mirror write, counted, and relayed into the events queue. */
export function createChangeFeed(deps: {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  mirror: MirrorStore;
  outbox: ChangeOutbox;
  eventsQueue: Queue<EventJobData>;
  /**
   * Who receives a change: the handler table's answer (worker/handlers.ts). A change nobody
   * receives is never an event, only its record's history (mirror/change-outbox.ts).
   */
  listens: ListensToChange;
  tracing?: Tracing;
}) {
  const { config, logger, metrics, tracing } = deps;
  /** Moves the recorded changes from the outbox into the events queue, where they run like any event. */
  const relay = createChangeRelay({
    outbox: deps.outbox,
    queue: deps.eventsQueue,
    dedupWindowMs: config.dedupWindowSeconds * 1000,
    intervalMs: config.worker.changeRelayIntervalMs,
    logger,
    ...(tracing ? { tracer: tracing.tracer } : {}),
  });
  /**
   * How sync code writes an account's mirror: each change it makes is recorded with the write, in
   * the outbox when a handler receives it, else as its record's history.
   */
  const writerOf = (mirror: MirrorStore) =>
    createMirrorWriter(mirror, {
      listens: deps.listens,
      // With tracing on, a change event's handlers continue the trace of the write that made it.
      ...(tracing ? { traceparent: activeTraceparent } : {}),
      onRecorded(changes, events) {
        for (const { data } of changes) {
          metrics.mirrorChanges.inc({ kind: data.kind, source: data.source });
          if (data.source === "reconcile") metrics.missedWebhooks.inc({ kind: data.kind });
        }
        // Debug: a busy sync records changes on every write; the metrics above count them.
        logger.debug({ changes: changes.length, events }, "mirror changes recorded");
        if (events > 0) relay.poke();
      },
    });
  return { writer: writerOf(deps.mirror), writerOf, relay };
}

export interface ChangeRelayOptions {
  outbox: ChangeOutbox;
  /** The events queue (its owner closes it), whose job options the changes get. */
  queue: Queue<EventJobData>;
  /** The event deduplication window: a re-sent change id is dropped for this long after its first add. */
  dedupWindowMs: number;
  /** Poll for rows written by other processes or left by a crash; 0: this process never relays. */
  intervalMs: number;
  /** Rows per transaction (default 100). */
  batchSize?: number;
  logger: Logger;
  /**
   * Given only when tracing is on: each change recorded with a trace context is sent in a span of
   * that trace ("change relay <type>"), and its job carries the span, so its handlers join the trace.
   */
  tracer?: Tracer;
  /** Test seam: runs after the rows were added to the queue, before they are deleted; a throw leaves them in the outbox. */
  afterAdd?: (rows: readonly OutboxRow[]) => Promise<void>;
}

export type ChangeRelay = ReturnType<typeof createChangeRelay>;

/**
 * Moves change events from the outbox (written in the mirror's transactions) into the events
 * queue, oldest first. Each job's id and deduplication id is the change id, so a batch sent again
 * after a crash between the add and the delete is dropped by BullMQ, whether the first job still
 * exists or was already removed. One batch at a time per process; the outbox holds no lock or
 * transaction while a batch is sent (a Redis outage must not stall the database), and relays
 * always send the oldest rows left, so the queue receives changes in the order they were written.
 */
export function createChangeRelay(options: ChangeRelayOptions) {
  const { outbox, logger, intervalMs, queue, dedupWindowMs: ttl, batchSize = 100 } = options;
  const enabled = intervalMs > 0;

  const send = async (rows: OutboxRow[]) => {
    const receivedAt = new Date().toISOString();
    const spans = options.tracer ? relaySpans(options.tracer, rows) : undefined;
    await (spans ?? noSpans).around(() =>
      queue.addBulk(
        rows.map((row) => ({
          name: row.type,
          data: {
            id: row.id,
            type: row.type,
            receivedAt,
            payload: { id: row.id, type: row.type, createdAt: row.createdAt, data: row.payload },
            // The company whose mirror changed; `default`'s carry none, as every event of POST /webhooks.
            ...ownData(row.account),
            // The relay's span when tracing is on, else the write's context as recorded (if any).
            ...withTrace(spans?.traceparentOf(row) ?? row.traceparent),
          },
          opts: changeJobIdentity(row.id, ttl),
        })),
      ),
    );
    await options.afterAdd?.(rows);
  };

  let running: Promise<number> | undefined;
  let again = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  // One loop at a time; a poke while it runs makes it look again before it ends. The loop clears
  // `running` in the same step as its last look, so no poke falls between the two.
  /** Relays until the outbox is empty (or a batch fails); resolves with the rows sent. */
  const drain = (): Promise<number> => {
    again = true;
    running ??= (async () => {
      let sent = 0;
      try {
        while (again && !stopped) {
          again = false;
          for (;;) {
            const n = await outbox.relayBatch(batchSize, send);
            sent += n;
            // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- stop() may have run during the await above; TS keeps the narrowing of the loop's condition
            if (n < batchSize || stopped) break;
          }
        }
      } finally {
        running = undefined;
      }
      if (sent > 0) logger.debug({ changes: sent }, "changes relayed");
      return sent;
    })();
    return running;
  };

  return {
    /** Starts the poll (no-op when intervalMs is 0). */
    start(): void {
      if (!enabled || timer) return;
      timer = setInterval(() => relaySafely(), intervalMs);
      timer.unref();
      relaySafely();
    },
    /** Relays soon: called right after a write recorded changes. */
    poke(): void {
      if (enabled && !stopped) relaySafely();
    },
    drain,
    /**
     * Stops polling and waits for the batch in hand, until the shutdown's deadline (default 3 s from
     * now): a batch still out then stays in the outbox and is sent again (its change ids dedup it).
     */
    async stop(deadline: Deadline = defaultStopDeadline()): Promise<void> {
      stopped = true;
      clearInterval(timer);
      // Its failure reaches drain()'s own callers (relaySafely logs it); stopping goes on.
      if (running)
        await deadline
          .within(running, "the change relay's batch")
          .catch((err: unknown) =>
            logger.warn(
              { err: (err as Error).message },
              "change relay stopped without its batch; the rows stay in the outbox and are sent again",
            ),
          );
    },
  };

  function relaySafely() {
    drain().catch((err: unknown) =>
      logger.warn({ err: (err as Error).message }, "change relay failed; the changes stay in the outbox and are sent again"),
    );
  }
}

const noSpans = { around: <T>(fn: () => Promise<T>) => fn() };
const withTrace = (traceparent: string | undefined) => (traceparent === undefined ? {} : { traceparent });
