import { SpanKind, type Span, type Tracer } from "@opentelemetry/api";
import { inSpan } from "../tracing/tracing.js";
import type { ApiCall } from "./api-call.js";
import { UpstreamAbortedError, UpstreamError, UpstreamRateLimitError } from "./errors.js";
import type { RateLimiter } from "./rate-limiter.js";
import { backoffMs } from "./retry.js";
import { sendAttempt, type AttemptSettings } from "./send-attempt.js";
import { eitherSignal, sleep } from "./sleep.js";

/** The client's options that decide how a call is sent and retried, resolved to their values. */
export interface SendSettings extends AttemptSettings {
  baseUrl: string;
  limiter: RateLimiter | undefined;
  readRetries: number;
  retryBaseMs: number;
  maxRateLimitRetries: number;
  tracer: Tracer | undefined;
  /** The client's own: aborts every call (the worker's shutdown deadline). */
  signal: AbortSignal | undefined;
}

/** The answer, and when the attempt that got it was sent (see ReadPage); a CLIENT span when tracing is on. */
export function sendCall<T>(settings: SendSettings, call: ApiCall<T>): Promise<{ value: T; sentAt: Date }> {
  const { tracer } = settings;
  if (!tracer) return sendWithRetries(settings, call);
  return inSpan(
    tracer,
    `${call.method} ${call.route}`,
    { kind: SpanKind.CLIENT, attributes: { "http.request.method": call.method, "url.template": call.route } },
    (span) => sendWithRetries(settings, call, span),
  );
}

async function sendWithRetries<T>(settings: SendSettings, call: ApiCall<T>, span?: Span): Promise<{ value: T; sentAt: Date }> {
  const signal = eitherSignal(settings.signal, call.signal);
  try {
    return await sendUntilDone(settings, call, signal, span);
  } catch (err) {
    // Wherever the call waited (the budget, a backoff, the answer), a stop ends it with one error.
    if (signal?.aborted && !(err instanceof UpstreamAbortedError))
      throw new UpstreamAbortedError(`${call.method} ${call.route} aborted: ${abortReason(signal)}`, err);
    throw err;
  }
}

const abortReason = (signal: AbortSignal) => (signal.reason instanceof Error ? signal.reason.message : String(signal.reason));

async function sendUntilDone<T>(
  settings: SendSettings,
  call: ApiCall<T>,
  signal: AbortSignal | undefined,
  span: Span | undefined,
): Promise<{ value: T; sentAt: Date }> {
  const url = new URL(settings.baseUrl + call.path);
  for (const [k, v] of Object.entries(call.query ?? {})) if (v !== undefined && v !== "") url.searchParams.set(k, String(v));
  let failures = 0;
  let rateLimited = 0;
  for (;;) {
    const waitStarted = span ? performance.now() : 0;
    await settings.limiter?.acquire({ priority: call.priority ?? "webhook", ...(signal ? { signal } : {}) });
    span?.addEvent("rate budget acquired", { "svc.budget.wait_ms": Math.round(performance.now() - waitStarted) });
    try {
      // Per attempt, after the slot: the time of the request actually sent, not of the first try.
      const sentAt = call.clock ? await call.clock() : new Date();
      return { value: await sendAttempt(settings, call, url, { span, signal }), sentAt };
    } catch (err) {
      if (err instanceof UpstreamRateLimitError) {
        span?.addEvent("rate limited", { "svc.retry_after_ms": err.retryAfterMs });
        // Nobody sharing the key sends until Retry-After has passed; a 429 was not processed,
        // so even a write is safe to send again.
        await settings.limiter?.pause(err.retryAfterMs);
        if (++rateLimited > settings.maxRateLimitRetries) throw err;
        if (!settings.limiter) await sleep(err.retryAfterMs, signal);
        continue;
      }
      const retryable = call.method === "GET" && err instanceof UpstreamError && err.retryable;
      if (!retryable || ++failures > settings.readRetries) throw err;
      span?.addEvent("retry", { "svc.retry.reason": (err as Error).message });
      await sleep(backoffMs(failures - 1, settings.retryBaseMs), signal);
    }
  }
}
