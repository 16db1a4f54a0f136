import type { Tracer } from "@opentelemetry/api";
import { inSpan } from "../tracing/tracing.js";
import type { MirrorStore } from "./mirror-store.js";

/**
 * The same mirror store with each write (upsert) in a span of its own ("mirror upsert <kind>":
 * records offered, written, skipped, changed), inside the refresh or handler that makes it. Reads
 * are left alone. Used only when tracing is on.
 */
export function tracedMirror(mirror: MirrorStore, tracer: Tracer): MirrorStore {
  return {
    ...mirror,
    upsert: (kind, records, readAt, options) =>
      inSpan(
        tracer,
        `mirror upsert ${kind}`,
        { attributes: { "svc.mirror.kind": kind, "svc.mirror.records": records.length } },
        async (span) => {
          const result = await mirror.upsert(kind, records, readAt, options);
          span.setAttributes({
            "svc.mirror.written": result.written,
            "svc.mirror.skipped": result.skipped,
            "svc.mirror.changed": result.changes.length,
          });
          return result;
        },
      ),
  };
}
