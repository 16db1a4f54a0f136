import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { EnvelopeError, EventIdentifierError, PayloadTooDeepError, WebhookSignatureError } from "../events/envelope.js";
import { codedError } from "../errors.js";
import { StandardWebhookError } from "../base/standard-webhooks.js";
import { ReservedEventTypeError } from "../events/errors.js";
import { UnavailableError } from "../base/deadline.js";
import { UnkeepablePayloadError } from "../events/keepable-payload.js";
import { BacklogFullError, QueueUnavailableError, UnstorableEventError } from "../queue/errors.js";
import { AccountsUnavailableError } from "../mirror/errors.js";

/**
 * The header every answer names the service by (`x-served-by: svc-webhooks`, set in app.ts): the
 * CLI's --url tells a service that is not this one apart from this one's refusals (both may answer
 * 404 `not_found`).
 */
export const SERVED_BY = { header: "x-served-by", value: "svc-webhooks" } as const;

/**
 * Every error code of the HTTP layer in one place: the errors the edge and the operator routes
 * raise themselves (below), the errors of the layers beneath that the edge answers by type, and
 * the codes it answers by name only (STATUS_BY_CODE). `toHttpFailure` is the one place where they
 * become HTTP answers.
 */

/** Too many body bytes are buffered across requests right now: 503, the sender retries later. */
export class ServerBusyError extends codedError("server_busy") {
  constructor(readonly budgetBytes: number) {
    super(`request bodies in flight already hold ${budgetBytes} bytes`);
  }
}

export class PayloadTooLargeError extends codedError("payload_too_large") {
  constructor(readonly maxBytes: number) {
    super(`body exceeds ${maxBytes} bytes`);
  }
}

/**
 * The body did not arrive within HTTP_BODY_TIMEOUT_MS of its read starting: 408, and what it had
 * sent is given back to the budget (a slow body holds neither bytes nor a slot for long).
 */
export class BodyTimeoutError extends codedError("body_timeout") {
  constructor(readonly deadlineMs: number) {
    super(`the body did not arrive within ${deadlineMs} ms`);
  }
}

/**
 * A delivery whose Content-Type is not JSON in UTF-8 (http/json-media-type.ts): 415, refused
 * before a byte of its body is read. The message names the rule, never the header's value.
 */
export class UnsupportedMediaTypeError extends codedError("unsupported_media_type") {
  constructor() {
    super("Content-Type must be application/json (or application/*+json), charset utf-8 if given");
  }
}

/** The client went away before its body was complete: its error, not ours (logged at debug). */
export class RequestAbortedError extends codedError("request_aborted") {
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
export class InvalidRequestError extends codedError("invalid_request") {}

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

/** The one place where typed errors become HTTP answers. */
export function toHttpFailure(err: unknown): HttpFailure {
  if (err instanceof WebhookSignatureError || err instanceof StandardWebhookError)
    return { status: 401, body: errorBody(err.code, err.message) };
  if (err instanceof PayloadTooLargeError) return { status: 413, body: errorBody(err.code, err.message) };
  if (err instanceof UnsupportedMediaTypeError) return { status: 415, body: errorBody(err.code, err.message) };
  if (
    err instanceof EnvelopeError ||
    err instanceof EventIdentifierError ||
    err instanceof PayloadTooDeepError ||
    err instanceof UnkeepablePayloadError ||
    err instanceof ReservedEventTypeError
  )
    return { status: 400, body: errorBody(err.code, err.message) };
  if (err instanceof UnstorableEventError) return { status: 422, body: errorBody(err.code, "the event cannot be stored") };
  // Nobody reads this answer (the client is gone); the status is for the request log.
  if (err instanceof RequestAbortedError) return { status: 400, body: errorBody(err.code, err.message) };
  if (err instanceof BodyTimeoutError) return { status: 408, body: errorBody(err.code, err.message) };
  if (err instanceof ServerBusyError) return retryLater(err.code, "too many request bodies in flight; retry later");
  if (err instanceof AccountsUnavailableError) return retryLater(err.code, err.message);
  if (err instanceof QueueUnavailableError) {
    const message =
      err instanceof BacklogFullError ? "too many events are waiting; retry later" : "the event queue is unavailable; retry later";
    return retryLater(err.code, message);
  }
  if (err instanceof UnavailableError) return retryLater(err.code, "a dependency did not answer in time; retry later");
  if (err instanceof Error && "code" in err && typeof err.code === "string") {
    const status = STATUS_BY_CODE.get(err.code);
    if (status !== undefined) return { status, body: errorBody(err.code, err.message) };
  }
  if (err instanceof HTTPException) {
    return { status: err.status, body: errorBody(`http_${err.status}`, err.message || "request failed") };
  }
  return { status: 500, body: errorBody("internal", "internal error") };
}

/**
 * Errors that are the caller's fault, by their stable `code`: the console's filters and the
 * operator API's bodies (above), and typed errors from below the edge (the mirror's filters, the
 * event log, the operator actions) that http maps without importing the modules that raise them.
 */
const STATUS_BY_CODE: ReadonlyMap<string, ContentfulStatusCode> = new Map([
  ["invalid_filter", 400],
  // The operator API (worker/operator-actions.ts, http/operator-routes.ts).
  ["invalid_request", 400],
  ["unknown_handler", 400],
  ["event_not_found", 404],
  ["replay_not_found", 404],
  ["record_not_found", 404],
  // The accounts registry (mirror/accounts.ts).
  ["account_not_found", 404],
  ["invalid_account", 400],
  ["account_exists", 409],
  ["key_refused", 422],
  ["secrets_key_missing", 400],
  ["sync_unavailable", 409],
  ["confirm_required", 409],
  ["replay_running", 409],
  ["idempotency_key_reused", 422],
  // An operator read cancelled at OPERATOR_QUERY_TIMEOUT_MS: the server is fine, this query was too broad.
  ["query_timeout", 503],
]);
