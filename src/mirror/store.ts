import type { Transaction } from "kysely";
import type { DatabaseSchema } from "./database-schema.js";

/** What the mirror keeps: the API's resources as last read, and reviews as delivered. */
export const MIRROR_KINDS = ["orders", "bookings", "menu-items", "reviews"] as const;
export type MirrorKind = (typeof MIRROR_KINDS)[number];

/** A record in the API's own shape (camelCase, amounts as the API gave them, unknown fields kept). */
export interface MirrorRecord {
  id: string;
  restaurantId: string;
  [field: string]: unknown;
}

/** One stored record whose content a write changed (bookkeeping-only writes are not changes). */
export interface MirrorChange {
  kind: MirrorKind;
  id: string;
  /** The stored record before the write; null when the mirror had never seen it. */
  before: MirrorRecord | null;
  after: MirrorRecord;
  /** Top-level field names whose values differ (every field of `after` on first sight), sorted. */
  changed: string[];
}

export interface UpsertResult {
  /** Records written: content changed, or the same content confirmed by a later read (read_at advanced). */
  written: number;
  /** Records refused: the mirror holds a copy further along, read later, or read at the same instant. */
  skipped: number;
  /** The written records whose content changed, in id order. */
  changes: MirrorChange[];
}

/** Runs inside the upsert's transaction, after the rows are written; query through `tx` only. */
export type OnMirrorChanges = (tx: Transaction<DatabaseSchema>, changes: readonly MirrorChange[]) => Promise<void>;

export interface UpsertOptions {
  /** Called once per upsert that changed something (the change-event outbox goes here). A throw rolls the whole upsert back. */
  onChanges?: OnMirrorChanges;
}

/** Filters of `list`; invalid values raise MirrorFilterError (an HTTP 400). */
export interface MirrorListFilter {
  restaurantId?: string;
  /** orders: one of the API's order statuses; bookings: an upper-case status; other kinds: none. */
  status?: string;
  /** Inclusive lower bound: orders' createdAt (ISO-8601 date or timestamp), bookings' date (YYYY-MM-DD). */
  from?: string;
  /** Exclusive upper bound, same format as `from`. */
  to?: string;
  /** 1..100, default 50. */
  limit?: number;
  /** `nextCursor` of the previous page. */
  cursor?: string;
}

export interface MirrorPage {
  /** Records in id order. */
  data: MirrorRecord[];
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

/**
 * The mirror's storage (PostgreSQL: mirror/postgres-store.ts). The guarantee every
 * implementation keeps: a stored record is replaced only by a copy that is further along its
 * state machine (rank, mirror/rank.ts) or, at the same rank, read strictly later by the shared
 * clock (`clock()`, read before the upstream GET is sent). On an exact tie the stored copy stays.
 * So duplicated, late or reordered refreshes can never regress the mirror.
 */
export interface MirrorStore {
  /** The clock shared by every worker (the database's). Read it before sending the upstream read. */
  clock(): Promise<Date>;
  upsert(kind: MirrorKind, records: readonly MirrorRecord[], readAt: Date, options?: UpsertOptions): Promise<UpsertResult>;
  get(kind: MirrorKind, id: string): Promise<MirrorRecord | undefined>;
  list(kind: MirrorKind, filter?: MirrorListFilter): Promise<MirrorPage>;
  /** Every record of a kind in id order (tests and reconciliation checks; unbounded). */
  all(kind: MirrorKind): Promise<MirrorRecord[]>;
  /** Epoch ms of the last write of a kind (database clock), for a mirror-lag metric. */
  lastWriteAt(kind: MirrorKind): Promise<number | undefined>;
}
