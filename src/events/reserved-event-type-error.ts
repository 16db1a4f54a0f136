/** A delivery of a type only this service produces (`change.*`): refused at the edge with a 400. */
export class ReservedEventTypeError extends Error {
  readonly code = "reserved_event_type";
  constructor(readonly type: string) {
    super(`event types starting with "change." are produced by the mirror, never delivered: ${JSON.stringify(type.slice(0, 100))}`);
    this.name = "ReservedEventTypeError";
  }
}
