/**
 * A handler still running at its deadline (HANDLER_TIMEOUT_MS). A retryable failure: the attempt
 * ends without it (its slot is freed even if its promise never settles) and a retry runs it again.
 */
export class HandlerTimeoutError extends Error {
  readonly code = "handler_timeout";
  constructor(readonly timeoutMs: number) {
    super(`handler timed out after ${timeoutMs} ms`);
    this.name = "HandlerTimeoutError";
  }
}
