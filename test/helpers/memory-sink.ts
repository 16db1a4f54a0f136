import { QueueUnavailableError } from "../../src/queue/errors.js";
import type { EventJobData } from "../../src/queue/events-queue.js";
import type { EventSink } from "../../src/queue/ingest-stream.js";

/**
 * The edge's sink in memory, for app.request() tests (no Redis): keeps events in `stored` and
 * deduplicates by id like the real one; while `failing`, refuses as an unavailable queue does.
 * `reset()` (in a beforeEach) empties `stored` in place and clears `failing`.
 */
export function memorySink() {
  const stored: EventJobData[] = [];
  const sink: EventSink = {
    enqueue(event) {
      if (mem.failing) return Promise.reject(new QueueUnavailableError("enqueue timed out"));
      const duplicate = stored.some((e) => e.id === event.id);
      if (!duplicate) stored.push(event);
      return Promise.resolve({ jobId: `job-${stored.length}`, duplicate });
    },
    ping: () => Promise.resolve(),
  };
  const mem = {
    sink,
    stored,
    failing: false,
    reset() {
      stored.length = 0;
      mem.failing = false;
    },
  };
  return mem;
}
