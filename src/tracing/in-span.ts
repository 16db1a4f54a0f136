import { SpanStatusCode, type Span, type SpanOptions, type Tracer } from "@opentelemetry/api";

/**
 * Runs `fn` in a new active span: an error it throws is recorded on the span (and its status set)
 * before it propagates, and the span ends either way.
 */
export function inSpan<T>(tracer: Tracer, name: string, options: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(name, options, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
      throw err;
    } finally {
      span.end();
    }
  });
}
