/** A console page's query parameter that is unknown or malformed: an HTTP 400 naming it, nothing read. */
export class ConsoleFilterError extends Error {
  readonly code = "invalid_filter";
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
    this.name = "ConsoleFilterError";
  }
}
