/** A list filter the mirror cannot apply (unknown status, malformed date, limit out of range, bad cursor): an HTTP 400. */
export class MirrorFilterError extends Error {
  readonly code = "invalid_filter";
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
    this.name = "MirrorFilterError";
  }
}
