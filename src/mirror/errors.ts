import { type UnstorableReason, storableText } from "./values.js";
import type { MirrorKind } from "./database.js";

/** A list filter the mirror cannot apply (unknown status, malformed date, limit out of range, bad cursor): an HTTP 400. */
export class MirrorFilterError extends Error {
  readonly code = "invalid_filter";
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
    this.name = "MirrorFilterError";
  }
}

/** A request the event log refuses: a bad filter or event (HTTP 400) or an unknown event id (404). Nothing was changed. */
export class EventLogError extends Error {
  constructor(
    readonly code: "invalid_filter" | "invalid_event" | "not_found",
    readonly field: string,
    message: string,
  ) {
    super(message);
    this.name = "EventLogError";
  }
}

/**
 * A record handed to the mirror lacks a field its table needs, has it in the wrong type, or holds
 * a value PostgreSQL would refuse. That record was not written (it is set aside as a rejected
 * record); `reason` is a stable code, the message names the field, never its value.
 */
export class MirrorRecordError extends Error {
  readonly code = "invalid_mirror_record";
  constructor(
    readonly kind: MirrorKind,
    readonly id: string | undefined,
    readonly field: string,
    readonly expected: string,
    readonly reason: UnstorableReason = "invalid_field",
  ) {
    super(
      `${kind} record ${id === undefined ? "(no id)" : JSON.stringify(storableText(id, 100))}: field ${storableText(field, 200)} must be ${expected}`,
    );
    this.name = "MirrorRecordError";
  }
}

/** An operator read ran past OPERATOR_QUERY_TIMEOUT_MS and was cancelled: an HTTP 503, nothing changed. */
class OperatorQueryTimeoutError extends Error {
  readonly code = "query_timeout";
  constructor(readonly timeoutMs: number) {
    super(
      `the query ran longer than ${timeoutMs} ms (OPERATOR_QUERY_TIMEOUT_MS) and was cancelled; narrow it (since/until, type, status) or retry`,
    );
    this.name = "OperatorQueryTimeoutError";
  }
}

/** PostgreSQL's query_canceled: a statement_timeout ran out. */
const QUERY_CANCELED = "57014";

/** Runs an operator read, turning a statement timeout into OperatorQueryTimeoutError. */
export async function withOperatorTimeout<T>(timeoutMs: number, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if ((error as { code?: unknown }).code === QUERY_CANCELED) throw new OperatorQueryTimeoutError(timeoutMs);
    throw error;
  }
}
