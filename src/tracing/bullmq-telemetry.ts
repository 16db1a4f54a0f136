import { context, INVALID_SPAN_CONTEXT, SpanKind, trace, type Context } from "@opentelemetry/api";
import type { Telemetry } from "bullmq";
import { BullMQOtel, BullMQOTelSpan } from "bullmq-otel";

/**
 * BullMQ's official OpenTelemetry add-on, minus its bookkeeping noise: BullMQ traces its own
 * polls and checks (getNextJob, stalled-job checks, …) as INTERNAL spans, which outside any
 * delivery would each start a trace of their own every few seconds. Those become non-recording
 * here; a job's `add` (producer) and `process` (consumer), and anything inside a delivery's
 * trace, are kept, so a job carries its producer's trace to the worker that runs it.
 */
export function quietBullmqTelemetry(tracerName: string): Telemetry<Context> {
  const otel = new BullMQOtel({ tracerName });
  return {
    contextManager: otel.contextManager,
    tracer: {
      startSpan(name, options?: { kind?: number }, ctx?: Context) {
        if (options?.kind === SpanKind.INTERNAL && !trace.getSpan(ctx ?? context.active()))
          return new BullMQOTelSpan(trace.wrapSpanContext(INVALID_SPAN_CONTEXT));
        return otel.tracer.startSpan(name, options, ctx);
      },
    },
  };
}
