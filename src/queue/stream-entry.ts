import type { EventJobData } from "./event-job.js";

/** The one stream field an event is stored in. */
export const ENTRY_FIELD = "e";

/**
 * The stream entry of an event: the EventJobData as JSON. `payloadJson`, when the caller has it
 * (the verified body's text, already known to be a JSON object), is spliced in as is, which spares
 * re-serializing the whole payload on the hot path.
 */
export function encodeEntry(event: EventJobData, payloadJson?: string): string {
  if (payloadJson === undefined) return JSON.stringify(event);
  // The trace context only when tracing is on (see EventJobData.traceparent): no bytes otherwise.
  const trace = event.traceparent === undefined ? "" : `,"traceparent":${JSON.stringify(event.traceparent)}`;
  return `{"id":${JSON.stringify(event.id)},"type":${JSON.stringify(event.type)},"receivedAt":${JSON.stringify(event.receivedAt)}${trace},"payload":${payloadJson}}`;
}

export class EntryDecodeError extends Error {
  readonly code = "invalid_entry";
  constructor(message: string) {
    super(message);
    this.name = "EntryDecodeError";
  }
}

/** Reads back what encodeEntry wrote; throws EntryDecodeError on anything else. */
export function decodeEntry(text: string): EventJobData {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new EntryDecodeError("entry is not JSON");
  }
  const e = value as Partial<EventJobData> | null;
  if (
    !e ||
    typeof e !== "object" ||
    typeof e.id !== "string" ||
    typeof e.type !== "string" ||
    typeof e.receivedAt !== "string" ||
    !e.payload ||
    typeof e.payload !== "object"
  ) {
    throw new EntryDecodeError("entry lacks id, type, receivedAt or payload");
  }
  return e as EventJobData;
}

/** What a consumer hands BullMQ for one entry (one element of an addBulk). */
export interface EntryJob {
  name: string;
  data: EventJobData;
  opts: { jobId: string; deduplication: { id: string; ttl: number } };
}

/**
 * The job of a stream entry. Moving one entry twice (a consumer died before acknowledging it) adds
 * nothing the second time: the job id is the entry's, and BullMQ's throttle deduplication on the
 * entry keeps its key for `dedupTtlMs` even after the job was completed and removed.
 */
export function jobOfEntry(entryId: string, text: string, dedupTtlMs: number): EntryJob {
  const data = decodeEntry(text);
  return { name: data.type, data, opts: entryJobIdentity(entryId, dedupTtlMs) };
}

/**
 * The options that make every job carrying a stream entry's event the same job: named after the
 * entry and deduplicated on the entry (a move after a claim, a retry or a dead letter added by a
 * consumer that died before its acknowledgement). Never on the event id: the edge already dropped
 * every copy of the event within its window, which starts when it accepted the first; a copy it
 * appended is a sender's retry after that window, and its own entry, which must run. (Keyed on
 * the event id from the time a continuation was added, the queue's window outlasted the edge's and
 * silently dropped such a retry's continuation while the consumer reported it retried.)
 */
export function entryJobIdentity(entryId: string, dedupTtlMs: number): EntryJob["opts"] {
  return { jobId: jobIdOfEntry(entryId), deduplication: { id: `entry-${entryId}`, ttl: dedupTtlMs } };
}

/**
 * The BullMQ job id of a stream entry: the entry id (`<ms>-<seq>`) never holds ":" and is never
 * all digits, as BullMQ requires. Deterministic, so moving an entry twice names one job.
 */
export function jobIdOfEntry(entryId: string): string {
  return entryId;
}
