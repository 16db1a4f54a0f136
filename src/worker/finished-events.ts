import type { Worker } from "bullmq";
import { type EventJobData, isDeadLetterPlacement } from "../queue/events-queue.js";
import { isFinalFailure } from "./job-observers.js";

/** One event whose attempt a worker finished (its handlers ran, or it failed for good), on either path. */
export interface FinishedEvent {
  id: string;
  type: string;
  /** completed (every handler ok), failed (for good), or retried (it runs again later from the events queue). */
  outcome: "completed" | "failed" | "retried";
  /** stream: its first attempt, straight from the ingest stream; queue: a job of the events queue. */
  via: "stream" | "queue";
}

export interface FinishedEvents {
  /** Tells every listener (the stream consumer's attempts; the event worker's jobs are seen below). */
  emit(event: FinishedEvent): void;
  /** Calls `listener` for every finished attempt; returns the unsubscribe function. */
  on(listener: (event: FinishedEvent) => void): () => void;
}

/** One feed of finished attempts for both paths: the stream consumer's and the event worker's jobs. */
export function createFinishedEvents(eventWorker: Worker<EventJobData>): FinishedEvents {
  const listeners = new Set<(event: FinishedEvent) => void>();
  const emit = (event: FinishedEvent) => {
    for (const listener of listeners) listener(event);
  };
  eventWorker.on("completed", (job) => emit({ id: job.data.id, type: job.data.type, outcome: "completed", via: "queue" }));
  eventWorker.on("failed", (job) => {
    // A dead letter's placement was reported (as failed) when its attempt on the stream finished.
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
