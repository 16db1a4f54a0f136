import { isDeepStrictEqual } from "node:util";

/** One top-level field a change changed: its value before (null when the record was new) and after. */
export interface FieldDiff {
  field: string;
  before: unknown;
  after: unknown;
}

type Fields = Record<string, unknown> | null | undefined;

/**
 * The fields of a change, one entry each, in field order: those `changed` names (a change event
 * carries the list), or, when it does not, every top-level field whose values differ. A field
 * absent on one side reads as null there. Pure: a page shows what changed, not two whole documents.
 */
export function fieldDiff(before: Fields, after: Fields, changed?: readonly string[]): FieldDiff[] {
  const fields =
    changed ??
    [...new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})])].filter((f) => !isDeepStrictEqual(before?.[f], after?.[f]));
  return [...fields].sort().map((field) => ({ field, before: before?.[field] ?? null, after: after?.[field] ?? null }));
}
