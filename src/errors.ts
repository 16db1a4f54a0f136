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
 * The HTTP answer an error declares where it is defined (http/errors.ts `toHttpFailure` answers by
 * it): its status, and the message a caller is shown when it is not the error's own (a 503's "retry
 * later"). An error that declares none is a 500.
 */
export interface HttpAnswer {
  readonly status: number;
  readonly message?: string;
}

/**
 * The base of an error class with a stable `code` (what the HTTP answers, the CLI and the logs go
 * by) and, when a caller can cause it, its HTTP answer, named after the class that extends it:
 * `class EnvelopeError extends codedError("invalid_event", { status: 400 }) {}`.
 */
export function codedError<Code extends string>(code: Code, http?: HttpAnswer) {
  return class extends NamedError {
    readonly code: Code = code;
    readonly http: HttpAnswer | undefined = http;
  };
}

/**
 * The base of an error class with several codes, each with its HTTP answer in `answers` (its
 * layer's table): made with one of the codes and a message, its answer read by its code.
 */
export function answeredByCode<Answers extends Record<string, HttpAnswer>>(answers: Answers) {
  return class AnsweredByCode extends NamedError {
    constructor(
      readonly code: keyof Answers & string,
      message: string,
    ) {
      super(message);
    }
    get http(): HttpAnswer {
      const answer: HttpAnswer | undefined = answers[this.code];
      return expectDefined(answer, `no HTTP answer for ${this.code}`);
    }
  };
}

/** An error's declared HTTP answer with its code, or undefined when it declares none. */
export function declaredAnswer(err: unknown): { code: string; status: number; message: string } | undefined {
  if (!(err instanceof Error) || !("code" in err) || typeof err.code !== "string" || !("http" in err)) return undefined;
  const http = err.http as HttpAnswer | undefined;
  if (typeof http?.status !== "number") return undefined;
  return { code: err.code, status: http.status, message: http.message ?? err.message };
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
