import type { HandlerRun } from "../mirror/event-log.js";

/** What the edge stores for one event: the job's data in the events queue. */
export interface EventJobData {
  /** The event id (envelope `id`, else SHA-256 of the raw body): also the deduplication id. */
  id: string;
  type: string;
  /** ISO 8601 time the edge accepted the event. */
  receivedAt: string;
  /** The whole verified body as parsed, unknown fields included. */
  payload: Record<string, unknown>;
  /** A replay aimed at some handlers (or a retry of those that failed): only these handler keys run. */
  only?: string[];
  /** A deliberate redelivery (`replay`): a run of its own, whose first attempt starts a new run in the event log. */
  replay?: true;
  /** The bulk replay (operator API) this job belongs to: its progress counts the job once it ends. */
  bulk?: string;
  /** Attempts of its run made before this job (1: its first ran straight from the ingest stream): 0 when absent. */
  attemptsBefore?: number;
  /**
   * The event already failed for good on its first attempt (from the ingest stream), for this
   * reason: the job's own first run fails with it at once, without running or recording anything,
   * which puts the event in the failed set (the dead letter) for `replay <jobId>`.
   */
  deadLetter?: string;
  /** The stacks of the handler errors behind `deadLetter`: the dead letter's job.stacktrace. */
  deadLetterStack?: string;
  /** Handler outcomes of an earlier attempt that the event log does not hold yet: the job records them. */
  unrecorded?: Record<string, HandlerOutcomeData>;
  /**
   * The W3C trace context of the delivery (its edge span), present only when tracing is on: the
   * handlers of every attempt, retry and replay of the event join the delivery's trace.
   */
  traceparent?: string;
}

/** One handler's outcome in one attempt. */
export interface HandlerOutcomeData {
  status: "ok" | "failed";
  error?: string;
  /** The failed handler's error's stack (bounded): where in its code it failed. */
  stack?: string;
  /** When and how long it ran, in which attempt: a row of the event's handler attempts once recorded. */
  run?: HandlerRun;
}

export interface EnqueueResult {
  /** The BullMQ job holding this event (the earlier one's, for a duplicate). */
  jobId: string;
  /** True when the event id was already seen within the deduplication window. */
  duplicate: boolean;
}

/** An event as the edge hands it over: with the verified body's text, which a sink may store as is. */
export interface EnqueueInput extends EventJobData {
  payloadJson?: string;
}

/** Where the edge hands verified events: BullMQ in production, anything in tests and benches. */
export interface EventSink {
  enqueue(event: EnqueueInput): Promise<EnqueueResult>;
  /** Resolves when the sink can accept events (Redis answers); rejects otherwise. */
  ping(): Promise<void>;
}
