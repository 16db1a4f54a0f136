// The bases every error class of the service builds on, and the check for a value an invariant
// guarantees. Each layer keeps its own errors in its own registry (mirror/errors.ts,
// upstream/errors.ts, …); what they share, being named after their class, lives here once.

/** An error named after its class (`error.name`), as every error of the service is. */
export class NamedError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * The base of an error class with a stable `code` (what the HTTP answers, the CLI and the logs go
 * by), named after the class that extends it: `class EnvelopeError extends codedError("invalid_event") {}`.
 */
export function codedError<Code extends string>(code: Code) {
  return class extends NamedError {
    readonly code: Code = code;
  };
}

/**
 * `value`, or an Error with `message` when it is undefined: for values an invariant guarantees (an
 * index within bounds, a list that is never empty), where a `!` would let a broken invariant
 * travel on as `undefined`.
 */
export function expectDefined<T>(value: T | undefined, message: string): T {
  if (value === undefined) throw new Error(message);
  return value;
}
