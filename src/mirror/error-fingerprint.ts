/** A fingerprint is at most this many characters (the masked first line of the error, cut). */
export const FINGERPRINT_LENGTH = 200;

// Each mask is applied in turn; earlier ones take what later ones would cut apart (a timestamp's
// digits, a UUID's hex, an id's digits).
const MASKS: readonly (readonly [RegExp, string])[] = [
  // ISO 8601 instants and dates: 2026-11-24T05:00:00.123Z, 2026-11-24 05:00, 2026-11-24.
  [/\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?/g, "<time>"],
  [/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, "<id>"],
  // Prefixed ids keep their prefix (ord_<id>, evt_<id>): the kind of record stays readable. An id
  // is a suffix holding a digit, or a short prefix before 6+ characters (the API's base36 ids
  // need not hold a digit), so words like status_changed stay as they are.
  [/\b([A-Za-z][A-Za-z0-9]*)_(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{4,}\b/g, "$1_<id>"],
  [/\b([a-z]{1,4})_[a-z0-9]{6,}\b/g, "$1_<id>"],
  [/\b0x[0-9a-f]+\b/gi, "<hex>"],
  // Hex runs of 8 or more holding a letter and a digit: hashes, trace ids, object ids.
  [/\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{8,}\b/gi, "<hex>"],
  [/\d+(?:\.\d+)*/g, "<n>"],
];

/**
 * The fingerprint of a handler's error: its first line with ids, numbers, times and hex masked,
 * so the failures of one bug that differ only in the order or event they name are one group.
 * Pure: the event log stores it with each failed outcome, and failure groups and bulk replays
 * select by it.
 *
 * @example errorFingerprint("order ord_7f3k2a9q not found after 3 tries") === "order ord_<id> not found after <n> tries"
 */
export function errorFingerprint(error: string): string {
  let text = (error.split("\n", 1)[0] ?? "").trim();
  for (const [pattern, mask] of MASKS) text = text.replace(pattern, mask);
  return text.slice(0, FINGERPRINT_LENGTH);
}
