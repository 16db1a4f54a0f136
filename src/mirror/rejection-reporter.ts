import type { Logger } from "pino";
import { storableText } from "./postgres-values.js";
import type { RejectedRecord } from "./store.js";

/** The counter the reporter bumps (metrics.mirrorRejected); labels are bounded: kind and reason code. */
export interface RejectionCounter {
  inc(labels: { kind: string; reason: string }): void;
}

/**
 * What the mirror's `onRejected` does in the service: one warning per refused record per read,
 * naming its id (shortened), field and reason, never its values (a 1 MB field stays out of the
 * log), and one count per record by kind and reason.
 */
export function createRejectionReporter(deps: { logger: Logger; counter?: RejectionCounter }) {
  return function reportRejected(rejected: readonly RejectedRecord[]): void {
    for (const r of rejected) {
      deps.counter?.inc({ kind: r.kind, reason: r.reason });
      deps.logger.warn(
        {
          kind: r.kind,
          id: r.id === undefined ? null : storableText(r.id, 200),
          reason: r.reason,
          field: storableText(r.field, 200),
          detail: r.message,
        },
        "mirror refused a record: set aside in rejected_records, the rest of its page was written",
      );
    }
  };
}
