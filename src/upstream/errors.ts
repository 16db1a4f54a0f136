// Every failure of an API call is one of these: a status (when the API answered), a stable
// `code` (from the error body when it has one) and whether the same call may succeed later.
// Messages name the method and route, never the API key. The layer's one registry of errors.

import { codedError, NamedError } from "../errors.js";

export interface UpstreamErrorInit {
  status?: number | undefined;
  code: string;
  retryable: boolean;
  cause?: unknown;
}

export class UpstreamError extends NamedError {
  readonly status: number | undefined;
  readonly code: string;
  /** Whether the same call may succeed later (429, 5xx, timeout, network). */
  readonly retryable: boolean;

  constructor(message: string, init: UpstreamErrorInit) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.retryable = init.retryable;
  }
}

/** What the API says about a failed call: its status and the error body's code. */
interface Answer {
  status?: number;
  code?: string;
}

/**
 * The class of an error answer of one kind: `status` and `code` default to the kind's, and
 * whether the same call may succeed later is the kind's.
 */
const answerError = (
  defaults: { status?: number; code: string },
  retryable: boolean,
): new (message: string, answer?: Answer) => UpstreamError =>
  class extends UpstreamError {
    constructor(message: string, { status = defaults.status, code = defaults.code }: Answer = {}) {
      super(message, { status, code, retryable });
    }
  };

/** 400 (and 422): a malformed parameter or body. */
export class UpstreamBadRequestError extends answerError({ status: 400, code: "invalid_request" }, false) {}

/** 401 / 403: the key is missing, malformed, unknown or not allowed. */
export class UpstreamAuthError extends answerError({ status: 401, code: "unauthorized" }, false) {}

export class UpstreamNotFoundError extends answerError({ status: 404, code: "not_found" }, false) {}

/** 409: `invalid_transition` or `not_refundable` (docs/upstream.md). */
export class UpstreamConflictError extends answerError({ status: 409, code: "conflict" }, false) {}

/** 429 that outlasted the client's retries; `retryAfterMs` is what the API asked for last. */
export class UpstreamRateLimitError extends UpstreamError {
  readonly retryAfterMs: number;
  constructor(message: string, { retryAfterMs, code = "rate_limited" }: { retryAfterMs: number; code?: string }) {
    super(message, { status: 429, code, retryable: true });
    this.retryAfterMs = retryAfterMs;
  }
}

export class UpstreamServerError extends answerError({ status: 500, code: "internal" }, true) {}

/** The class of a call that got no answer (no status): its kind's code, and whether the same call may succeed later. */
const noAnswerError = (code: string, retryable: boolean) =>
  class extends UpstreamError {
    constructor(message: string, cause?: unknown) {
      super(message, { code, retryable, cause });
    }
  };

/** No answer within the client's timeout: for a write, whether it happened is unknown. */
export class UpstreamTimeoutError extends noAnswerError("timeout", true) {}

/**
 * The caller gave up on the call (its signal aborted: a stopping worker, a Ctrl-C) while it waited
 * for the budget, a retry or the answer. Nothing is wrong with the API: never retried.
 */
export class UpstreamAbortedError extends noAnswerError("aborted", false) {}

/** The connection failed (refused, reset, DNS): for a write, whether it happened is unknown. */
export class UpstreamNetworkError extends noAnswerError("network", true) {
  /** The network error's code (ECONNREFUSED, ENOTFOUND, …), or "network" when none said. */
  readonly errno: string;
  constructor(message: string, cause?: unknown, errno = "network") {
    super(message, cause);
    this.errno = errno;
  }
}

/** A success answer whose body is not JSON or not the shape the spec promises. */
export class UpstreamResponseError extends answerError({ code: "invalid_response" }, false) {}

/**
 * A list answer refused as a page, however well-formed: a body over the client's byte cap
 * (`page_too_large`), more records than the `limit` asked for (`page_over_limit`), or a cursor the
 * walk was already handed (`repeated_cursor`: a list that would never end). The same read gets
 * the same answer, so it is never retried.
 */
export class UpstreamPageRefusedError extends UpstreamResponseError {
  constructor(
    message: string,
    { status = 200, code }: { status?: number; code: "page_too_large" | "page_over_limit" | "repeated_cursor" | "page_cap" },
  ) {
    super(message, { status, code });
  }
}

/** A call refused before it was sent, because the API would refuse it (e.g. `limit` > 100). */
export class UpstreamRequestError extends UpstreamError {
  constructor(message: string, { code = "invalid_request" }: { code?: string } = {}) {
    super(message, { code, retryable: false });
  }
}

/** A key of the wrong form. Its message never contains the key (it would end up in logs). */
export class ApiKeyError extends codedError("invalid_api_key") {}

/**
 * The typed error for an error answer. `body` is the response text as read: `{ error: { code,
 * message } }` (docs/upstream.md) gives the code and detail, anything else gives `http_<status>`.
 * `cutAtBytes`: the body went on past that many bytes and was not read; the code and the start of
 * the message are still taken from what was, and the message says it was cut.
 */
export function errorFromResponse(res: {
  status: number;
  body: string;
  cutAtBytes?: number | undefined;
  retryAfterMs: number;
  context: string;
}): UpstreamError {
  const { status } = res;
  let code = `http_${status}`;
  let message = `${res.context} answered ${status}`;
  const detail = res.cutAtBytes === undefined ? errorOfBody(res.body) : errorOfCutBody(res.body);
  if (detail.code) code = detail.code;
  if (detail.message !== undefined) message += `: ${detail.message}`;
  if (res.cutAtBytes !== undefined) message += `… (cut at ${res.cutAtBytes} bytes)`;
  const answer = { status, code };
  if (status === 429) return new UpstreamRateLimitError(message, { retryAfterMs: res.retryAfterMs, code });
  if (status === 400 || status === 422) return new UpstreamBadRequestError(message, answer);
  if (status === 401 || status === 403) return new UpstreamAuthError(message, answer);
  if (status === 404) return new UpstreamNotFoundError(message, answer);
  if (status === 409) return new UpstreamConflictError(message, answer);
  if (status >= 500) return new UpstreamServerError(message, answer);
  return new UpstreamError(message, { status, code, retryable: false });
}

/** The documented error body's code and message, when the body is that shape. */
function errorOfBody(body: string): { code?: string; message?: string } {
  try {
    const parsed = JSON.parse(body) as { error?: { code?: unknown; message?: unknown } } | null;
    return {
      ...(typeof parsed?.error?.code === "string" && parsed.error.code ? { code: parsed.error.code } : {}),
      ...(typeof parsed?.error?.message === "string" ? { message: parsed.error.message } : {}),
    };
  } catch {
    // Not the documented shape (a proxy's HTML page, an empty body): keep the generic code.
    return {};
  }
}

/** The same from the start of a body that was cut (no longer JSON): the code, and the message as far as it was read. */
function errorOfCutBody(body: string): { code?: string; message?: string } {
  const code = /"code"\s*:\s*"([A-Za-z0-9_.-]{1,64})"/.exec(body)?.[1];
  const message = /"message"\s*:\s*"((?:[^"\\]|\\.)*)/.exec(body)?.[1];
  return { ...(code ? { code } : {}), ...(message === undefined ? {} : { message }) };
}

/**
 * True when no retry can fix the failure: a 4xx other than 429, a call refused before it was
 * sent (what the API would have answered 400), or a page refused for its size or cursor. Queue
 * consumers stop retrying on these.
 */
export function isPermanentUpstreamError(err: unknown): boolean {
  if (err instanceof UpstreamRequestError || err instanceof UpstreamPageRefusedError) return true;
  return err instanceof UpstreamError && err.status !== undefined && err.status >= 400 && err.status < 500 && err.status !== 429;
}
