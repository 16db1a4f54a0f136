/** The queue could not acknowledge an event in time: the edge answers 503 and the sender retries. */
export class QueueUnavailableError extends Error {
  readonly code = "queue_unavailable";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "QueueUnavailableError";
  }
}

/** An event the queue cannot store (it does not serialise to JSON): the sender's fault, a 4xx. */
export class UnstorableEventError extends Error {
  readonly code = "unstorable_event";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "UnstorableEventError";
  }
}
