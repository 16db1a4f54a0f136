/** A request the event log refuses: a bad filter or event (HTTP 400) or an unknown event id (404). Nothing was changed. */
export class EventLogError extends Error {
  constructor(
    readonly code: "invalid_filter" | "invalid_event" | "not_found",
    readonly field: string,
    message: string,
  ) {
    super(message);
    this.name = "EventLogError";
  }
}
