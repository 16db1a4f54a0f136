import { SpanKind, SpanStatusCode, type Tracer } from "@opentelemetry/api";
import type { Context, MiddlewareHandler } from "hono";
import { contextOfTraceparent } from "./traceparent.js";

/** What the span reads off the request once the route ran (the event the delivery carried). */
export interface ServerSpanOptions {
  /** Span name: the route, never the raw path (bounded). */
  route: string;
  attributes?(c: Context): Record<string, string | boolean | undefined>;
}

/**
 * The edge's SERVER span around a route, continuing a sender's W3C `traceparent` when it sends
 * one (Standard Webhooks senders may). Installed only when tracing is on.
 */
export function serverSpan(tracer: Tracer, options: ServerSpanOptions): MiddlewareHandler {
  return async function traceRequest(c, next) {
    const parent = contextOfTraceparent(c.req.header("traceparent"));
    const name = `${c.req.method} ${options.route}`;
    const attributes = { "http.request.method": c.req.method, "http.route": options.route };
    await tracer.startActiveSpan(name, { kind: SpanKind.SERVER, attributes }, parent, async (span) => {
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
