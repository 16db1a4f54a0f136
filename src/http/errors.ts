import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { EnvelopeError } from "../events/envelope.js";
import { WebhookSignatureError } from "../events/signature.js";
import { QueueUnavailableError } from "../queue/errors.js";
import { PayloadTooLargeError } from "./raw-body.js";

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
  if (err instanceof EnvelopeError) return { status: 400, body: errorBody(err.code, err.message) };
  if (err instanceof QueueUnavailableError) {
    return {
      status: 503,
      body: errorBody(err.code, err.code === "backlog_full" ? "too many events are waiting; retry later" : "the event queue is unavailable; retry later"),
      headers: { "Retry-After": String(RETRY_AFTER_SECONDS) },
    };
  }
  if (err instanceof HTTPException) {
    return { status: err.status as ContentfulStatusCode, body: errorBody(`http_${err.status}`, err.message || "request failed") };
  }
  return { status: 500, body: errorBody("internal", "internal error") };
}
