import { SpanKind, SpanStatusCode, type Span, type Tracer } from "@opentelemetry/api";
import { contextOfTraceparent, formatTraceparent } from "./traceparent.js";

/** The spans of one relayed batch: one per change recorded with a trace context. */
export interface RelaySpans {
  /** The `traceparent` a change's job carries: its relay span's, or undefined for a change recorded untraced. */
  traceparentOf(row: { id: string }): string | undefined;
  /** Runs the send; the spans end with it, marked failed if it throws. */
  around<T>(send: () => Promise<T>): Promise<T>;
}

/**
 * A producer span ("change relay <type>") for each outbox row that holds the trace context of
 * the write that recorded it, a child of that write: the change event's job, and so its handlers,
 * continue the trace that began with the webhook (or the sweep) whose refresh made the change.
 * Rows recorded with tracing off get no span and start no trace.
 */
export function relaySpans(tracer: Tracer, rows: readonly { id: string; type: string; traceparent?: string }[]): RelaySpans {
  const spans = new Map<string, Span>();
  for (const row of rows) {
    if (row.traceparent === undefined) continue;
    const span = tracer.startSpan(
      `change relay ${row.type}`,
      { kind: SpanKind.PRODUCER, attributes: { "svc.event.id": row.id, "svc.event.type": row.type } },
      contextOfTraceparent(row.traceparent),
    );
    spans.set(row.id, span);
  }
  return {
    traceparentOf: (row) => {
      const span = spans.get(row.id);
      return span ? formatTraceparent(span.spanContext()) : undefined;
    },
    async around(send) {
      try {
        return await send();
      } catch (err) {
        for (const span of spans.values()) {
          span.recordException(err as Error);
          span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
        }
        throw err;
      } finally {
        for (const span of spans.values()) span.end();
      }
    },
  };
}
