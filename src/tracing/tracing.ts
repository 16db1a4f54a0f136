import {
  trace,
  type Context,
  type Tracer,
  context,
  INVALID_SPAN_CONTEXT,
  SpanKind,
  isSpanContextValid,
  ROOT_CONTEXT,
  TraceFlags,
  type SpanContext,
  SpanStatusCode,
  type Span,
  type SpanOptions,
} from "@opentelemetry/api";
import type { Telemetry } from "bullmq";
import { BullMQOtel, BullMQOTelSpan } from "bullmq-otel";
import type { Context as HonoContext, MiddlewareHandler } from "hono";
import { withTimeout } from "../base/deadline.js";
import type { Config } from "../config/config.js";

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

/**
 * Starts the OpenTelemetry Node SDK for traces when the environment asks for them (Config's `tracing`); otherwise
 * loads nothing (the SDK is imported only here, dynamically) and returns undefined.
 *
 * The SDK reads the rest of the standard environment itself: OTEL_SERVICE_NAME and
 * OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_PROTOCOL (http/protobuf by default, http/json,
 * grpc), OTEL_EXPORTER_OTLP_HEADERS, OTEL_TRACES_SAMPLER(_ARG), OTEL_BSP_*. No instrumentation is
 * registered (nothing is patched): the service makes its own spans where a delivery goes. Metrics
 * stay Prometheus's and logs stdout's, so the SDK's metric and log pipelines are not started.
 */
export async function startTracing({ requested, serviceNamed }: Config["tracing"]): Promise<Tracing | undefined> {
  if (!requested) return undefined;
  const { NodeSDK } = await import("@opentelemetry/sdk-node");
  const sdk = new NodeSDK({
    ...(serviceNamed ? {} : { serviceName: TRACER_NAME }),
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();
  // Over the globally registered tracer provider, the one the SDK just started.
  return {
    tracer: trace.getTracer(TRACER_NAME),
    bullmq: quietBullmqTelemetry(TRACER_NAME),
    shutdown: () => withTimeout(sdk.shutdown(), SHUTDOWN_MS, "exporting the last spans").catch(() => undefined),
  };
}

/** How long a stopping process waits to export its last spans: a collector that is away must not hold the exit. */
const SHUTDOWN_MS = 5000;

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

/**
 * Runs `fn` in a new active span: an error it throws is recorded on the span (and its status set)
 * before it propagates, and the span ends either way.
 */
export function inSpan<T>(tracer: Tracer, name: string, options: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(name, options, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      markFailed(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Records a thrown error on a span and marks the span failed. */
function markFailed(span: Span, err: unknown): void {
  span.recordException(err as Error);
  span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
}

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

/** What the span reads off the request once the route ran (the event the delivery carried). */
export interface ServerSpanOptions {
  /** Span name: the route, never the raw path (bounded). */
  route: string;
  attributes?(c: HonoContext): Record<string, string | boolean | undefined>;
}

/**
 * The edge's SERVER span around a route: the root of the delivery's trace. A sender's W3C
 * `traceparent` (Standard Webhooks senders may send one) becomes a link, not the parent: the
 * endpoint is public, and an unauthenticated header must not decide whether or where we trace
 * (its sampled flag would switch our sampling on or off). Installed only when tracing is on.
 */
export function serverSpan(tracer: Tracer, options: ServerSpanOptions): MiddlewareHandler {
  return async function traceRequest(c, next) {
    const sender = parseTraceparent(c.req.header("traceparent"));
    const name = `${c.req.method} ${options.route}`;
    const attributes = { "http.request.method": c.req.method, "http.route": options.route };
    const links = sender ? [{ context: sender }] : [];
    await tracer.startActiveSpan(name, { kind: SpanKind.SERVER, attributes, links, root: true }, async (span) => {
      try {
        await next();
      } finally {
        const status = c.res.status;
        span.setAttribute("http.response.status_code", status);
        for (const [k, v] of Object.entries(options.attributes?.(c) ?? {})) if (v !== undefined) span.setAttribute(k, v);
        if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      }
    });
  };
}

/**
 * A producer span ("change relay <type>") for each outbox row that holds the trace context of
 * the write that recorded it, a child of that write: the change event's job, and so its handlers,
 * continue the trace that began with the webhook (or the sweep) whose refresh made the change.
 * Rows recorded with tracing off get no span and start no trace.
 */
export function relaySpans(tracer: Tracer, rows: readonly { id: string; type: string; traceparent?: string }[]) {
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
    /** The `traceparent` a change's job carries: its relay span's, or undefined for a change recorded untraced. */
    traceparentOf: (row: { id: string }): string | undefined => {
      const span = spans.get(row.id);
      return span ? formatTraceparent(span.spanContext()) : undefined;
    },
    /** Runs the send; the spans end with it, marked failed if it throws. */
    async around<T>(send: () => Promise<T>): Promise<T> {
      try {
        return await send();
      } catch (err) {
        for (const span of spans.values()) markFailed(span, err);
        throw err;
      } finally {
        for (const span of spans.values()) span.end();
      }
    },
  };
}
