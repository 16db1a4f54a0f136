import { trace, type Link, type Tracer } from "@opentelemetry/api";
import type { RedisClient } from "../redis/redis.js";
import { inSpan } from "./in-span.js";
import { activeTraceparent } from "./trace-context.js";
import { parseTraceparent } from "./traceparent.js";

/** Most events of one burst linked from its refresh: a flood must not make a span of megabytes. */
const MAX_LINKS = 128;

/**
 * Span links for the coalesced refresh. Many events of a kind (every restaurant) share one refresh job, which
 * carries the trace of the first (bullmq-otel); each event notes its own trace context here when it
 * schedules the refresh, and the refresh's span links to every trace noted since the last one ran.
 * Best-effort and bounded: a lost note loses a link, never a refresh.
 */
export interface RefreshLinks {
  /** Remembers the active span (the handler's) for the next refresh of this kind. */
  note(kind: string): Promise<void>;
  /** Runs a refresh in a span linked to every event that asked for it since the last one. */
  traced<T>(kind: string, refresh: () => Promise<T>): Promise<T>;
}

export function createRefreshLinks(options: { redis: RedisClient; prefix: string; tracer: Tracer; ttlMs: number }): RefreshLinks {
  const { redis, tracer } = options;
  const key = (kind: string) => `${options.prefix}:trace-links:${kind}`;

  const take = async (kind: string): Promise<Link[]> => {
    const k = key(kind);
    const replies = await redis.multi().lrange(k, 0, -1).del(k).exec();
    const noted = (replies?.[0]?.[1] ?? []) as string[];
    const own = trace.getActiveSpan()?.spanContext().traceId;
    const links = new Map<string, Link>();
    for (const value of noted) {
      const context = parseTraceparent(value);
      // The trace the refresh runs in needs no link to itself.
      if (context && context.traceId !== own) links.set(context.traceId, { context });
    }
    return [...links.values()];
  };

  return {
    async note(kind) {
      const traceparent = activeTraceparent();
      if (!traceparent) return;
      const k = key(kind);
      await redis
        .multi()
        .rpush(k, traceparent)
        .ltrim(k, -MAX_LINKS, -1)
        .pexpire(k, options.ttlMs)
        .exec()
        .catch(() => undefined);
    },
    async traced(kind, refresh) {
      const links = await take(kind).catch(() => []);
      const attributes = { "svc.mirror.kind": kind, "svc.refresh.linked_traces": links.length };
      return inSpan(tracer, `refresh ${kind}`, { links, attributes }, () => refresh());
    },
  };
}
