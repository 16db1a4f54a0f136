import { trace, type Context, type Tracer } from "@opentelemetry/api";
import type { Telemetry } from "bullmq";
import { quietBullmqTelemetry } from "./bullmq-telemetry.js";

export const TRACER_NAME = "svc-webhooks";

/**
 * Tracing, when it is on. Everything that traces takes a `Tracing | undefined`: undefined (no
 * OTEL_EXPORTER_OTLP_ENDPOINT) means no span, no context and no extra field anywhere, so the
 * edge pays one null check.
 */
export interface Tracing {
  tracer: Tracer;
  /** For BullMQ queues and workers whose jobs carry their producer's trace (the sync queue). */
  bullmq: Telemetry<Context>;
  /** Exports what is buffered and stops the SDK. */
  shutdown(): Promise<void>;
}

/** A Tracing over the globally registered tracer provider (the SDK start-tracing.ts starts). */
export function createTracing(shutdown: () => Promise<void>): Tracing {
  return { tracer: trace.getTracer(TRACER_NAME), bullmq: quietBullmqTelemetry(TRACER_NAME), shutdown };
}
