import { SpanKind, SpanStatusCode, type Tracer } from "@opentelemetry/api";
import type { Context, MiddlewareHandler } from "hono";
import { parseTraceparent } from "./traceparent.js";

/** What the span reads off the request once the route ran (the event the delivery carried). */
export interface ServerSpanOptions {
  /** Span name: the route, never the raw path (bounded). */
  route: string;
  attributes?(c: Context): Record<string, string | boolean | undefined>;
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
