import type { Tracer } from "@opentelemetry/api";
import type { WrapHandler } from "../events/registry.js";
import { inSpan } from "./in-span.js";

/**
 * Runs each handler, as the registry adds it, in a span of its own ("handler <source> <type>"), a
 * child of the delivery's trace when the event carries one. Used only when tracing is on; the
 * registry names handlers before wrapping them, so keys are the same with tracing on or off.
 */
export function traceHandlers<Ctx>(tracer: Tracer): WrapHandler<Ctx> {
  return (handler, { source, type, key }) => {
    const name = `handler ${source} ${type}`;
    const attributes = { "svc.handler.source": source, "svc.event.type": type, "svc.handler.key": key };
    return (event: never, ctx: Ctx) =>
      inSpan(tracer, name, { attributes }, async (span) => {
        const { id } = event as { id?: unknown };
        if (typeof id === "string") span.setAttribute("svc.event.id", id);
        await handler(event, ctx);
      });
  };
}
