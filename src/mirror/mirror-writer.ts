import type { ChangeSource } from "../events/change-events.js";
import { insertChanges, type RecordedChange } from "./change-outbox.js";
import type { MirrorChange, MirrorKind, MirrorRecord, MirrorStore, RefusedUpstreamRecord, UpsertResult } from "./store.js";

/** Who made the mirror read the records: one source for the whole write, or decided per change. */
export type SourceOf = ChangeSource | ((change: MirrorChange) => ChangeSource | Promise<ChangeSource>);

/** How sync code writes the mirror: the upsert plus, in its transaction, the change events it made. */
export interface MirrorWriter {
  /** `refused`: records of the same read the client found out of shape (set aside with the write). */
  write(
    kind: MirrorKind,
    records: readonly MirrorRecord[],
    readAt: Date,
    source: SourceOf,
    refused?: readonly RefusedUpstreamRecord[],
  ): Promise<UpsertResult>;
}

/**
 * A writer that records a change event (an outbox row) for every change a write makes, in the
 * write's own transaction, then reports them once committed (`onRecorded`: metrics and a poke to
 * the relay). Without `record` (`backfill --no-changes`), writes produce no change events.
 */
export function createMirrorWriter(
  mirror: MirrorStore,
  options: {
    record?: boolean;
    onRecorded?: (changes: readonly RecordedChange[]) => void;
    /**
     * Given only when tracing is on: the trace context of the write (the refresh, sweep or handler
     * span it runs in), stored with its changes so their events continue that trace.
     */
    traceparent?: () => string | undefined;
  } = {},
): MirrorWriter {
  const record = options.record ?? true;
  return {
    async write(kind, records, readAt, source, refused = []) {
      if (!record) return mirror.upsert(kind, records, readAt, { refused });
      const sourceOf = typeof source === "function" ? source : () => source;
      // Read here, in the caller's span, rather than inside the database's transaction callback.
      const traceparent = options.traceparent?.();
      const recorded: RecordedChange[] = [];
      const result = await mirror.upsert(kind, records, readAt, {
        refused,
        // Once per transaction of the write (a large one is several): each records its own changes.
        onChanges: async (tx, changes) => {
          recorded.push(...(await insertChanges(tx, changes, sourceOf, traceparent)));
        },
      });
      if (recorded.length > 0) options.onRecorded?.(recorded);
      return result;
    },
  };
}
