import { context, trace } from "@opentelemetry/api";
import { contextOfTraceparent, formatTraceparent } from "./traceparent.js";

/** The `traceparent` of the active span (the one a record written now belongs to), if any. */
export function activeTraceparent(): string | undefined {
  const span = trace.getActiveSpan();
  return span ? formatTraceparent(span.spanContext()) : undefined;
}

/**
 * Runs `fn` with the span a carried `traceparent` names as its parent (an event read from the
 * ingest stream or a job, continuing the delivery's trace). Without one, `fn` runs as it is: no
 * context work at all when tracing is off, since nothing then writes the field.
 */
export function withCarriedTrace<T>(traceparent: string | undefined, fn: () => T): T {
  if (traceparent === undefined) return fn();
  return context.with(contextOfTraceparent(traceparent), fn);
}
