import type { Logger } from "pino";
import { EventDataError, type AnyEvent } from "../events/catalog.js";
import { dispatchEvent, errorMessage, failedOutcome, failureSummary, handlerStacks } from "../events/dispatch.js";
import { startHandlerDeadline } from "../events/handler-deadline.js";
import type { HandlerRegistry } from "../events/registry.js";
import type { EventJobData, HandlerOutcomeData } from "./event-job.js";
import type { EventAttempt } from "./event-journal.js";
import { isPermanentFailure } from "./event-worker.js";
import { withCarriedTrace } from "../tracing/trace-context.js";

/** What an event's first attempt (straight from the ingest stream) did, before it is recorded. */
export interface FirstAttempt {
  entryId: string;
  data: EventJobData;
  /** What the event log records: status and each handler's outcome. */
  record: EventAttempt;
  /** Handlers to run again (retryable failures): the event continues in the events queue. */
  retry?: string[];
  /** Why the event failed for good: it is placed in the events queue's failed set. */
  deadLetter?: string;
  /** The stacks of the handler errors behind `deadLetter` (the dead letter's job.stacktrace). */
  deadLetterStack?: string;
  /** performance.now() when the attempt began. */
  started: number;
}

export interface FirstAttemptOptions<Ctx> {
  registry: HandlerRegistry<Ctx>;
  /** Attempts per event in all: with 1, a failure is final. */
  attempts: number;
  /** `signal` is aborted when the attempt's deadline (`handlerTimeoutMs`) passes. */
  makeContext(event: AnyEvent, attempt: number, logger: Logger, signal: AbortSignal): Ctx;
  /** How long the event's handlers may run (HANDLER_TIMEOUT_MS); 0 or unset: no deadline. */
  handlerTimeoutMs?: number;
  /** Errors that no retry can fix, beside BullMQ's UnrecoverableError. */
  isPermanent?(err: unknown): boolean;
  logger: Logger;
}

/**
 * Runs every handler of the event once, each failure isolated (dispatchEvent), and says what
 * follows: handled; retried (some failure a retry may fix, attempts left); or failed for good
 * (every failure permanent, the data does not match its schema, or no attempt left). A handler
 * still running at the deadline is a retryable failure; the attempt does not wait for it.
 */
export async function runFirstAttempt<Ctx>(options: FirstAttemptOptions<Ctx>, entryId: string, data: EventJobData): Promise<FirstAttempt> {
  const started = performance.now();
  const event: AnyEvent = { ...data.payload, id: data.id, type: data.type };
  const log = options.logger.child({ eventId: event.id, eventType: event.type, entryId, attempt: 1 });
  const handlers: Record<string, HandlerOutcomeData> = {};
  const record = (status: EventAttempt["status"]): EventAttempt => ({
    id: data.id,
    type: data.type,
    payload: data.payload,
    status,
    handlers,
  });
  let result;
  const deadline = startHandlerDeadline(options.handlerTimeoutMs ?? 0);
  try {
    // The handlers join the delivery's trace when the edge stored one (tracing on).
    result = await withCarriedTrace(data.traceparent, () =>
      dispatchEvent(options.registry, event, options.makeContext(event, 1, log, deadline.signal), undefined, undefined, deadline.signal),
    );
  } catch (err) {
    if (!(err instanceof EventDataError)) throw err;
    log.warn({ err: err.message }, "event failed for good");
    return { entryId, data, record: record("failed"), deadLetter: err.message, started };
  } finally {
    deadline.clear();
  }
  for (const key of result.succeeded) handlers[key] = { status: "ok" };
  for (const f of result.failures) {
    log.warn({ handler: f.key, err: errorMessage(f.error) }, "handler failed");
    handlers[f.key] = failedOutcome(f.error);
  }
  if (result.failures.length === 0) return { entryId, data, record: record("handled"), started };
  const retrying = options.attempts > 1 && !result.failures.every((f) => isPermanentFailure(f.error, options));
  const summary = failureSummary(result.failures);
  log.warn({ err: summary }, retrying ? "event failed, will retry" : "event failed for good");
  return retrying
    ? { entryId, data, record: record("received"), retry: result.failures.map((f) => f.key), started }
    : { entryId, data, record: record("failed"), deadLetter: summary, deadLetterStack: handlerStacks(result.failures), started };
}
