import { trace } from "@opentelemetry/api";

/**
 * A pino mixin that puts the active span's `trace_id` and `span_id` on every line logged inside it
 * (the names OpenTelemetry's log data model and pino instrumentations use). Installed only when
 * tracing is on: with it off the logger has no mixin at all.
 */
export function traceLogFields(): Record<string, string> {
  const span = trace.getActiveSpan();
  // A fresh object each time: pino merges the line's own fields into what the mixin returns.
  if (!span) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}
