import type { Tracer } from "@opentelemetry/api";
import type { Handler, HandlerMap } from "../events/registry.js";
import { inSpan } from "./in-span.js";

/**
 * The same handler map with each handler run in a span of its own ("handler <source> <type>"), a
 * child of the delivery's trace when the event carries one. Used only when tracing is on.
 */
export function tracedHandlers<Ctx>(map: HandlerMap<Ctx>, source: string, tracer: Tracer): HandlerMap<Ctx> {
  const traced: Record<string, Handler<never, Ctx>> = {};
  for (const [type, handler] of Object.entries(map)) {
    if (!handler) continue;
    const name = `handler ${source} ${type}`;
    traced[type] = (event: never, ctx: Ctx) =>
      inSpan(tracer, name, { attributes: { "svc.handler.source": source, "svc.event.type": type } }, async (span) => {
        const { id } = event as { id?: unknown };
        if (typeof id === "string") span.setAttribute("svc.event.id", id);
        await handler(event, ctx);
      });
  }
  return traced;
}
