/** The queue could not acknowledge an event in time: the edge answers 503 and the sender retries. */
export class QueueUnavailableError extends Error {
  readonly code = "queue_unavailable";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "QueueUnavailableError";
  }
}
