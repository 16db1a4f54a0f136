import type { Worker } from "bullmq";
import type { EventJobData } from "../queue/event-job.js";
import { isDeadLetterPlacement } from "../queue/event-worker.js";
import { isFinalFailure } from "./job-observers.js";

/** One event that a worker finished with, on either path. */
export interface SettledEvent {
  id: string;
  type: string;
  /** completed (every handler ok), failed (for good), or retried (it runs again later from the events queue). */
  outcome: "completed" | "failed" | "retried";
  /** stream: its first attempt, straight from the ingest stream; queue: a job of the events queue. */
  via: "stream" | "queue";
}

export interface SettledEvents {
  /** Tells every listener (the stream consumer calls it; the event worker's jobs are seen below). */
  emit(event: SettledEvent): void;
  /** Calls `listener` for every event settled; returns the unsubscribe function. */
  on(listener: (event: SettledEvent) => void): () => void;
}

/** One feed of settled events for both paths: the stream consumer's and the event worker's jobs. */
export function createSettledEvents(eventWorker: Worker<EventJobData>): SettledEvents {
  const listeners = new Set<(event: SettledEvent) => void>();
  const emit = (event: SettledEvent) => {
    for (const listener of listeners) listener(event);
  };
  eventWorker.on("completed", (job) => emit({ id: job.data.id, type: job.data.type, outcome: "completed", via: "queue" }));
  eventWorker.on("failed", (job) => {
    // A dead letter's placement was settled (as failed) by the stream consumer.
    if (!job || isDeadLetterPlacement(job, true)) return;
    emit({ id: job.data.id, type: job.data.type, outcome: isFinalFailure(job) ? "failed" : "retried", via: "queue" });
  });
  return {
    emit,
    on(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
