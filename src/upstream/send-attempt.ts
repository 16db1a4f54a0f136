import type { Span } from "@opentelemetry/api";
import { formatTraceparent } from "../tracing/tracing.js";
import type { ApiCall, ApiResponseInfo } from "./api-call.js";
import { UpstreamAbortedError, UpstreamError, UpstreamNetworkError, UpstreamResponseError, UpstreamTimeoutError } from "./errors.js";
import { readAnswer } from "./read-answer.js";

/** What one attempt needs of the client's options, resolved to their values. */
export interface AttemptSettings {
  headers: Record<string, string>;
  timeoutMs: number;
  maxPageBytes: number;
  onResponse: ((info: ApiResponseInfo) => void) | undefined;
}

/** One request and its answer, read (bounded), reported and parsed; retries are the caller's. */
export async function sendAttempt<T>(
  settings: AttemptSettings,
  call: ApiCall<T>,
  url: URL,
  { span, signal }: { span?: Span | undefined; signal?: AbortSignal | undefined } = {},
): Promise<T> {
  const { timeoutMs } = settings;
  const started = performance.now();
  const report = (status: number | "timeout" | "network") =>
    settings.onResponse?.({
      method: call.method,
      route: call.route,
      status,
      durationMs: performance.now() - started,
      budget: call.priority ?? "webhook",
    });
  // The timeout covers the whole answer, body included: a body that stalls after the headers
  // is a timeout like any other (retried for a GET), never a raw DOMException.
  let res: Response | undefined;
  let json: unknown;
  // The API sees the call's trace context (W3C), so its own traces can join ours.
  const traceparent = span ? formatTraceparent(span.spanContext()) : undefined;
  const sent = traceparent === undefined ? settings.headers : { ...settings.headers, traceparent };
  const context = `${call.method} ${call.route}`;
  try {
    res = await fetch(url, {
      method: call.method,
      headers: call.body === undefined ? sent : { ...sent, "content-type": "application/json" },
      ...(call.body === undefined ? {} : { body: JSON.stringify(call.body) }),
      // The caller's signal too: a stop ends a hung read at once, not at the timeout.
      signal: signal ? AbortSignal.any([AbortSignal.timeout(timeoutMs), signal]) : AbortSignal.timeout(timeoutMs),
    });
    json = await readAnswer(res, { maxBytes: settings.maxPageBytes, context });
  } catch (err) {
    if (res && err instanceof UpstreamError) {
      report(res.status);
      span?.setAttribute("http.response.status_code", res.status);
      throw err;
    }
    // Not reported: the API did nothing wrong, the caller stopped.
    if (signal?.aborted) throw new UpstreamAbortedError(`${context} aborted`, err);
    const timedOut = (err as Error).name === "TimeoutError";
    report(timedOut ? "timeout" : "network");
    if (timedOut) throw new UpstreamTimeoutError(`${context} timed out after ${timeoutMs} ms`);
    throw new UpstreamNetworkError(`${context} failed: ${(err as Error).message}`, err);
  }
  report(res.status);
  span?.setAttribute("http.response.status_code", res.status);
  const parsed = call.schema.safeParse(json);
  if (!parsed.success) {
    const detail = parsed.error.issues
      .slice(0, 3)
      .map((i) => `${i.path.join(".")}: ${i.message}`)
      .join("; ");
    throw new UpstreamResponseError(`${context} answered an unexpected shape: ${detail}`, { status: res.status });
  }
  return parsed.data;
}
