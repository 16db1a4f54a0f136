import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { codedError, declaredAnswer } from "../errors.js";

/**
 * The header every answer names the service by (`x-served-by: svc-webhooks`, set in app.ts): the
 * CLI's --url tells a service that is not this one apart from this one's refusals (both may answer
 * 404 `not_found`).
 */
export const SERVED_BY = { header: "x-served-by", value: "svc-webhooks" } as const;

/**
 * The errors the edge and the operator routes raise themselves, each with its HTTP answer; the
 * layers beneath declare theirs in their own registries, and `toHttpFailure` answers by them all.
 */

/** Too many body bytes are buffered across requests right now: 503, the sender retries later. */
export class ServerBusyError extends codedError("server_busy", { status: 503, message: "too many request bodies in flight; retry later" }) {
  constructor(readonly budgetBytes: number) {
    super(`request bodies in flight already hold ${budgetBytes} bytes`);
  }
}

export class PayloadTooLargeError extends codedError("payload_too_large", { status: 413 }) {
  constructor(readonly maxBytes: number) {
    super(`body exceeds ${maxBytes} bytes`);
  }
}

/**
 * The body did not arrive within HTTP_BODY_TIMEOUT_MS of its read starting: 408, and what it had
 * sent is given back to the budget (a slow body holds neither bytes nor a slot for long).
 */
export class BodyTimeoutError extends codedError("body_timeout", { status: 408 }) {
  constructor(readonly deadlineMs: number) {
    super(`the body did not arrive within ${deadlineMs} ms`);
  }
}

/**
 * A delivery whose Content-Type is not JSON in UTF-8 (http/json-media-type.ts): 415, refused
 * before a byte of its body is read. The message names the rule, never the header's value.
 */
export class UnsupportedMediaTypeError extends codedError("unsupported_media_type", { status: 415 }) {
  constructor() {
    super("Content-Type must be application/json (or application/*+json), charset utf-8 if given");
  }
}

/**
 * The client went away before its body was complete: its error, not ours (logged at debug).
 * Nobody reads its answer (the client is gone); the status is for the request log.
 */
export class RequestAbortedError extends codedError("request_aborted", { status: 400 }) {
  constructor(options?: { cause?: unknown }) {
    super("the client closed the connection before the body was complete", options);
  }
}

/**
 * What is not ready, in words safe for an unauthenticated route (never a host or a driver's error
 * text): the readiness check rejects with it.
 */
export class NotReadyError extends codedError("not_ready") {
  constructor(readonly reason: string) {
    super(reason);
  }
}

/** An operator API body or header that is not what the route takes: a 400 saying what is wrong. */
export class InvalidRequestError extends codedError("invalid_request", { status: 400 }) {}

export interface ErrorBody {
  error: { code: string; message: string };
}

export interface HttpFailure {
  status: ContentfulStatusCode;
  body: ErrorBody;
  headers?: Record<string, string>;
}

/** Seconds a sender should wait before retrying after a 503. */
const RETRY_AFTER_SECONDS = 5;

export const errorBody = (code: string, message: string): ErrorBody => ({ error: { code, message } });

/** A 503 the sender retries after RETRY_AFTER_SECONDS. */
const retryLater = (code: string, message: string): HttpFailure => ({
  status: 503,
  body: errorBody(code, message),
  headers: { "Retry-After": String(RETRY_AFTER_SECONDS) },
});

/**
 * The one place where errors become HTTP answers: each error declares its status (and the message a
 * caller is shown, when not its own) where it is defined (`codedError(code, { status })`, or a table
 * by code in its layer's registry); a 503 tells the sender when to retry. Anything else is a 500.
 */
export function toHttpFailure(err: unknown): HttpFailure {
  const declared = declaredAnswer(err);
  if (declared) {
    const { code, status, message } = declared;
    if (status === 503) return retryLater(code, message);
    return { status: status as ContentfulStatusCode, body: errorBody(code, message) };
  }
  if (err instanceof HTTPException) {
    return { status: err.status, body: errorBody(`http_${err.status}`, err.message || "request failed") };
  }
  return { status: 500, body: errorBody("internal", "internal error") };
}
