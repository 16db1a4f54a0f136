import type { MirrorKind } from "./store.js";

/** A record handed to the mirror lacks a field its table needs, or has it in the wrong type. Nothing was written. */
export class MirrorRecordError extends Error {
  readonly code = "invalid_mirror_record";
  constructor(
    readonly kind: MirrorKind,
    readonly id: string | undefined,
    readonly field: string,
    readonly expected: string,
  ) {
    super(`${kind} record ${id === undefined ? "(no id)" : JSON.stringify(id)}: field ${field} must be ${expected}; nothing was written`);
    this.name = "MirrorRecordError";
  }
}
