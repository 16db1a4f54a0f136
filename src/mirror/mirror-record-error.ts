import type { UnstorableReason } from "./postgres-values.js";
import { storableText } from "./postgres-values.js";
import type { MirrorKind } from "./store.js";

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
