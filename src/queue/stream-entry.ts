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
 * event id keeps its key for `dedupTtlMs` even after the job was completed and removed.
 */
export function jobOfEntry(entryId: string, text: string, dedupTtlMs: number): EntryJob {
  const data = decodeEntry(text);
  return { name: data.type, data, opts: entryJobIdentity(entryId, data.id, dedupTtlMs) };
}

/**
 * The options that make every job carrying a stream entry's event the same job: named after the
 * entry, deduplicated on the event id for the window (a move after a claim, a retry or a dead
 * letter added by a consumer that died before its acknowledgement).
 */
export function entryJobIdentity(entryId: string, eventId: string, dedupTtlMs: number): EntryJob["opts"] {
  return { jobId: jobIdOfEntry(entryId), deduplication: { id: eventId, ttl: dedupTtlMs } };
}

/**
 * The BullMQ job id of a stream entry: the entry id (`<ms>-<seq>`) never holds ":" and is never
 * all digits, as BullMQ requires. Deterministic, so moving an entry twice names one job.
 */
export function jobIdOfEntry(entryId: string): string {
  return entryId;
}
