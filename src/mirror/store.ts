import type { Transaction } from "kysely";
import type { DatabaseSchema } from "./database-schema.js";
import type { UnstorableReason } from "./postgres-values.js";

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
  /**
   * Records the mirror cannot hold (a value PostgreSQL refuses, a field missing or mistyped): set
   * aside in the rejected records with their reason, while the rest of the batch was written.
   */
  rejected: RejectedRecord[];
}

/** One record an upsert set aside. Nothing here holds the record's values, so it is safe to log. */
export interface RejectedRecord {
  kind: MirrorKind;
  /** undefined when the record had no usable id (then it is reported, but not kept in the table). */
  id: string | undefined;
  /** A stable code for metrics and alerts. */
  reason: UnstorableReason;
  /** The field's path (`diner.name`, `items[0].price`). */
  field: string;
  /** The sentence naming the field and what it must be. */
  message: string;
}

/** A rejected record as the mirror keeps it (until the record reads clean again). */
export interface RejectionRow {
  kind: MirrorKind;
  id: string;
  restaurantId: string | null;
  reason: string;
  detail: string;
  /** The record as read: JSON text, NUL and lone surrogates escaped. */
  raw: string;
  firstSeen: Date;
  lastSeen: Date;
  /** Reads that found it refused. */
  count: number;
}

/** An id an event named that the API did not list within the give-up time: reported, never dropped silently. */
export interface UnlistedRecord {
  kind: MirrorKind;
  id: string;
  restaurantId: string;
  /** The first events that named it (at most 20). */
  eventIds: string[];
  firstNotedAt: Date;
  /** Set by the store when the row is written (ignored on write). */
  givenUpAt?: Date;
  /** Refresh rounds that looked for it. */
  attempts: number;
}

/** Runs inside the upsert's transaction, after the rows are written; query through `tx` only. */
export type OnMirrorChanges = (tx: Transaction<DatabaseSchema>, changes: readonly MirrorChange[]) => Promise<void>;

/** A record the API client already found out of shape (ApiClient's `refused`): kept with the rejected. */
export interface RefusedUpstreamRecord {
  record: unknown;
  field: string;
  message: string;
}

export interface UpsertOptions {
  /** Records of the same read that the client refused: set aside with the write's own (reason `invalid_field`). */
  refused?: readonly RefusedUpstreamRecord[];
  /**
   * Called in each transaction of the upsert that changed something (the change-event outbox goes
   * here): a write of more than 100 ids is several transactions (write-chunks.ts). A throw rolls
   * that transaction back and fails the upsert; the transactions before it stay committed.
   */
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
 * clock (`clock()`, read per attempt as the upstream GET is sent, after its rate-limit slot was
 * taken). On an exact tie the stored copy stays.
 * So duplicated, late or reordered refreshes can never regress the mirror.
 */
export interface MirrorStore {
  /** The clock shared by every worker (the database's). Read it as the upstream read is sent (ApiClient's `clock` option). */
  clock(): Promise<Date>;
  upsert(kind: MirrorKind, records: readonly MirrorRecord[], readAt: Date, options?: UpsertOptions): Promise<UpsertResult>;
  get(kind: MirrorKind, id: string): Promise<MirrorRecord | undefined>;
  list(kind: MirrorKind, filter?: MirrorListFilter): Promise<MirrorPage>;
  /** Every record of a kind in id order (tests and reconciliation checks; unbounded). */
  all(kind: MirrorKind): Promise<MirrorRecord[]>;
  /** Epoch ms of the last write of a kind (database clock), for a mirror-lag metric. */
  lastWriteAt(kind: MirrorKind): Promise<number | undefined>;
  /** The rejected records (of a kind, or all), by kind and id: what the mirror could not hold, and why. */
  rejections(kind?: MirrorKind): Promise<RejectionRow[]>;
  /**
   * For each query, how many stored orders were created after `since` (of one restaurant, or all),
   * counted up to its `max`: where a record sits in a newest-first list, as far as the mirror knows
   * (refresh planning). With `status`, only orders the mirror holds in that status (where it sits
   * in a list filtered by it). One statement for them all: a refresh job's ids cost one query.
   */
  countOrdersNewer(queries: readonly { since: Date; restaurantId?: string; status?: string; max: number }[]): Promise<number[]>;
  /**
   * Stored bookings per day (YYYY-MM-DD) from `from` to `to`, inclusive, company-wide: what a
   * booking list by date window would page through, as far as the mirror knows (refresh planning).
   */
  countBookingsByDay(from: string, to: string): Promise<Map<string, number>>;
  /** The same per restaurant, for these restaurants only: restaurant id → day → bookings. */
  countBookingsByRestaurantDay(from: string, to: string, restaurantIds: readonly string[]): Promise<Map<string, Map<string, number>>>;
  /** Reports an id the API never listed in time (a row until the record is written). */
  recordUnlisted(row: UnlistedRecord): Promise<void>;
  /** The ids given up on (of a kind, or all), by kind and id. */
  unlisted(kind?: MirrorKind): Promise<UnlistedRecord[]>;
}
