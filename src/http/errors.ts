import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { EnvelopeError, EventIdentifierError, PayloadTooDeepError } from "../events/envelope.js";
import { ReservedEventTypeError } from "../events/reserved-event-type-error.js";
import { WebhookSignatureError } from "../events/signature.js";
import { QueueUnavailableError, UnstorableEventError } from "../queue/errors.js";
import { ServerBusyError } from "./body-budget.js";
import { PayloadTooLargeError, RequestAbortedError } from "./raw-body.js";

export interface ErrorBody {
  error: { code: string; message: string };
}

export interface HttpFailure {
  status: ContentfulStatusCode;
  body: ErrorBody;
  headers?: Record<string, string>;
}

/** Seconds a sender should wait before retrying after a 503. */
export const RETRY_AFTER_SECONDS = 5;

export const errorBody = (code: string, message: string): ErrorBody => ({ error: { code, message } });

/** The one place where typed errors become HTTP answers. */
export function toHttpFailure(err: unknown): HttpFailure {
  if (err instanceof WebhookSignatureError) return { status: 401, body: errorBody(err.code, err.message) };
  if (err instanceof PayloadTooLargeError) return { status: 413, body: errorBody(err.code, err.message) };
  if (
    err instanceof EnvelopeError ||
    err instanceof EventIdentifierError ||
    err instanceof PayloadTooDeepError ||
    err instanceof ReservedEventTypeError
  )
    return { status: 400, body: errorBody(err.code, err.message) };
  if (err instanceof UnstorableEventError) return { status: 422, body: errorBody(err.code, "the event cannot be stored") };
  // Nobody reads this answer (the client is gone); the status is for the request log.
  if (err instanceof RequestAbortedError) return { status: 400, body: errorBody(err.code, err.message) };
  if (err instanceof ServerBusyError) {
    return {
      status: 503,
      body: errorBody(err.code, "too many request bodies in flight; retry later"),
      headers: { "Retry-After": String(RETRY_AFTER_SECONDS) },
    };
  }
  if (err instanceof QueueUnavailableError) {
    return {
      status: 503,
      body: errorBody(
        err.code,
        err.code === "backlog_full" ? "too many events are waiting; retry later" : "the event queue is unavailable; retry later",
      ),
      headers: { "Retry-After": String(RETRY_AFTER_SECONDS) },
    };
  }
  const coded = codedError(err);
  const codedStatus = coded && STATUS_BY_CODE.get(coded.code);
  if (coded && codedStatus !== undefined) return { status: codedStatus, body: errorBody(coded.code, coded.message) };
  if (err instanceof HTTPException) {
    return { status: err.status, body: errorBody(`http_${err.status}`, err.message || "request failed") };
  }
  return { status: 500, body: errorBody("internal", "internal error") };
}

/**
 * Typed errors from below the edge (the mirror's filters, the event log) that are the caller's
 * fault, by their stable `code`: http maps them without importing the modules that raise them.
 */
const STATUS_BY_CODE: ReadonlyMap<string, ContentfulStatusCode> = new Map([
  ["invalid_filter", 400],
  // The operator API (worker/operator-actions.ts, http/operator-action-routes.ts).
  ["invalid_request", 400],
  ["unknown_handler", 400],
  ["event_not_found", 404],
  ["replay_not_found", 404],
  ["record_not_found", 404],
  ["sync_unavailable", 409],
  ["confirm_required", 409],
  ["replay_running", 409],
  ["idempotency_key_reused", 422],
  // An operator read cancelled at OPERATOR_QUERY_TIMEOUT_MS: the server is fine, this query was too broad.
  ["query_timeout", 503],
]);

function codedError(err: unknown): { code: string; message: string } | undefined {
  if (!(err instanceof Error)) return undefined;
  const code: unknown = (err as Error & { code?: unknown }).code;
  return typeof code === "string" ? { code, message: err.message } : undefined;
}
