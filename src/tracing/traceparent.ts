import { isSpanContextValid, ROOT_CONTEXT, trace, TraceFlags, type Context, type SpanContext } from "@opentelemetry/api";

// W3C Trace Context, version 00: 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>.
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * The W3C `traceparent` of a span context, or undefined for an invalid one. Written by hand rather
 * than through the global propagator: the stream entry, the jobs and the upstream request carry
 * W3C trace context whatever OTEL_PROPAGATORS says.
 */
export function formatTraceparent(span: SpanContext): string | undefined {
  if (!isSpanContextValid(span)) return undefined;
  return `00-${span.traceId}-${span.spanId}-${(span.traceFlags & 1) === 1 ? "01" : "00" /* bit 0: sampled */}`;
}

/** The remote span context a `traceparent` names; undefined for anything malformed (it is ignored). */
export function parseTraceparent(value: string | undefined): SpanContext | undefined {
  const match = value === undefined ? null : TRACEPARENT.exec(value.trim());
  if (!match) return undefined;
  const [, traceId = "", spanId = "", flags = "00"] = match;
  const span: SpanContext = { traceId, spanId, traceFlags: parseInt(flags, 16) & TraceFlags.SAMPLED, isRemote: true };
  return isSpanContextValid(span) ? span : undefined;
}

/** A context whose parent is the span a `traceparent` names; the root context when it names none. */
export function contextOfTraceparent(value: string | undefined): Context {
  const span = parseTraceparent(value);
  return span ? trace.setSpanContext(ROOT_CONTEXT, span) : ROOT_CONTEXT;
}
