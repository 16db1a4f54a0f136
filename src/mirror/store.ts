/** What the mirror keeps: the API's resources as last read, and reviews as delivered. */
export const MIRROR_KINDS = ["orders", "bookings", "menu-items", "reviews"] as const;
export type MirrorKind = (typeof MIRROR_KINDS)[number];

export interface MirrorRecord {
  id: string;
  restaurantId: string;
  [field: string]: unknown;
}

export interface UpsertResult {
  written: number;
  /** Records refused because the mirror already holds a newer or further-along copy. */
  skipped: number;
}

/**
 * The mirror's storage. Redis by default; anything that keeps these guarantees can be plugged:
 * an upsert never replaces a record read earlier (`fetchedAt`) or one further along its state
 * machine (see mirror/rank.ts), so duplicated, late or reordered refreshes cannot regress it.
 */
export interface MirrorStore {
  upsert(kind: MirrorKind, records: readonly MirrorRecord[], fetchedAt: number): Promise<UpsertResult>;
  get(kind: MirrorKind, id: string): Promise<MirrorRecord | undefined>;
  list(kind: MirrorKind, restaurantId: string): Promise<MirrorRecord[]>;
  /** Every record of a kind (operators, tests and reconciliation checks). */
  all(kind: MirrorKind): Promise<MirrorRecord[]>;
  /** Epoch ms of the last write of each kind, for a mirror-lag metric. */
  lastWriteAt(kind: MirrorKind): Promise<number | undefined>;
}
