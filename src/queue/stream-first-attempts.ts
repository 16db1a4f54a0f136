import { errorMessage } from "../events/dispatch.js";
import type { AttemptResult } from "./attempt-runner.js";
import { eventBackoff } from "./job-options.js";
import type { EventJobData } from "./event-job.js";
import type { StreamConsumerState } from "./stream-consumer-state.js";
import { decodeEntry } from "./stream-entry.js";
import { entryText, type Entry } from "./stream-handoff.js";

export interface FirstAttempts {
  /** Holds the entry in flight and runs it start to end, in the background. */
  begin(entry: Entry): void;
  /**
   * At a stop, the entries read ahead whose handlers have not started go into the events queue at
   * once (as claimed entries do), where any worker takes them now rather than after claimIdleMs.
   * Their slot callbacks still run later (p-limit cannot drop them) and start nothing.
   */
  releaseUnstarted(): Promise<void>;
}

/**
 * The stream consumer's side of each entry: its event's first attempt (run by the attempt runner
 * in one of the consumer's slots), the event's continuation in the events queue if any, and only
 * then the entry's acknowledgement; each entry finishes on its own.
 */
export function createFirstAttempts(state: StreamConsumerState): FirstAttempts {
  const { options, logger, handoff, inflight, unstarted } = state;

  /**
   * The first attempt of one entry's event, its handlers in one of the consumer's slots; undefined
   * for an entry that can never be an event. Once stop() was called no slot starts handlers: the
   * attempt ends `released` and releaseUnstarted hands the entry on.
   */
  const attempt = async (
    entry: Entry,
    text: string,
  ): Promise<{ data: EventJobData; result: AttemptResult; started: boolean } | undefined> => {
    const [entryId] = entry;
    let data: EventJobData;
    try {
      data = decodeEntry(text);
    } catch (err) {
      // Only this service writes the stream; an unreadable entry can never be handled.
      logger.error({ entryId, err: (err as Error).message }, "dropping an unreadable stream entry");
      return undefined;
    }
    unstarted.set(entryId, entry);
    let started = false;
    const result = await options.runner.run({
      data,
      number: 1,
      of: options.attempts,
      // The events queue's backoff: a retry's wait is drawn from it, recorded, and the job carrying the event on waits it.
      backoff: eventBackoff(options.backoffMs),
      delivery: true,
      slot: (run) => state.handlerSlots(() => (state.stopping ? undefined : ((started = unstarted.delete(entryId)), run()))),
      stopping: () => state.stopping,
      logger: logger.child({ eventId: data.id, eventType: data.type, entryId, attempt: 1 }),
    });
    return { data, result, started };
  };

  /** One entry, start to end: attempt (recorded by the runner), continue in the queue if need be, acknowledge. */
  const handleEntry = async (entry: Entry, text: string) => {
    const [entryId] = entry;
    const started = performance.now();
    const a = await attempt(entry, text);
    if (a) {
      // Released at a stop: releaseUnstarted moves it on (or did, while its attempt waited to start).
      if (a.result.outcome === "released" || (!a.started && !unstarted.delete(entryId))) return;
      await handoff.continueAfter(entryId, a.data, a.result);
    }
    await handoff.ackDelete(entryId);
    const outcome = a?.result.outcome;
    if (a && (outcome === "completed" || outcome === "failed" || outcome === "retried"))
      options.onFinished?.({ id: a.data.id, type: a.data.type, entryId, outcome, seconds: (performance.now() - started) / 1000 });
  };

  return {
    begin(entry) {
      const [entryId] = entry;
      const text = entryText(entry);
      inflight.add(entryId, Buffer.byteLength(text));
      handleEntry(entry, text)
        // A step that failed (Redis away) leaves the entry pending: no longer kept by the heartbeat,
        // it is claimed after claimIdleMs and runs again from the events queue.
        .catch((err: unknown) => logger.warn({ entryId, err: errorMessage(err) }, "could not finish a stream entry; it will be claimed"))
        .finally(() => inflight.remove(entryId));
    },
    async releaseUnstarted() {
      const entries = [...unstarted.values()];
      unstarted.clear();
      if (entries.length === 0) return;
      await handoff.moveToQueue(entries, "moved stream entries not yet started into the events queue at a stop");
      for (const [id] of entries) inflight.remove(id);
    },
  };
}
