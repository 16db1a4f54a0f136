import { UnavailableError } from "../base/deadline.js";
import { codedError, type HttpAnswer } from "../errors.js";

/** The queue could not acknowledge an event in time: the edge answers 503 and the sender retries. */
export class QueueUnavailableError extends UnavailableError {
  override readonly code: string = "queue_unavailable";
  override readonly http: HttpAnswer = { status: 503, message: "the event queue is unavailable; retry later" };
}

/** An event the queue cannot store (it does not serialise to JSON): the sender's fault, a 4xx. */
export class UnstorableEventError extends codedError("unstorable_event", { status: 422, message: "the event cannot be stored" }) {}

/**
 * The ingest stream holds more than MAX_BACKLOG events (they arrive faster than they reach the
 * queue): the edge refuses new ones with a 503 instead of filling Redis. A QueueUnavailableError,
 * so every place that answers 503 for an unavailable queue answers it for this too.
 */
export class BacklogFullError extends QueueUnavailableError {
  override readonly code = "backlog_full";
  override readonly http: HttpAnswer = { status: 503, message: "too many events are waiting; retry later" };
  constructor(readonly backlog: number) {
    super(`the ingest backlog is full (${backlog} events)`);
  }
}

/** A stream entry that is not what encodeEntry writes (only this service writes the stream): it can never be handled. */
export class EntryDecodeError extends codedError("invalid_entry") {}
