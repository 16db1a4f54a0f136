/** An operator request refused for the caller's fault (HTTP 4xx by its code); nothing was changed. */
export class OperatorActionError extends Error {
  constructor(
    readonly code:
      | "event_not_found"
      | "unknown_handler"
      | "invalid_request"
      | "replay_not_found"
      | "sync_unavailable"
      | "record_not_found"
      | "idempotency_key_reused"
      | "confirm_required"
      | "replay_running",
    message: string,
  ) {
    super(message);
    this.name = "OperatorActionError";
  }
}
