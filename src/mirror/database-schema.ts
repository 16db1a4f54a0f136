import type { ColumnType, Generated } from "kysely";

// The tables as Kysely sees them (docs: migrations.ts, 0001_mirror and 0002_event_log are the
// truth; these types follow them). Both drivers read `numeric` as a string ('12.30'),
// `timestamptz` as a Date, `text[]` as an array and `jsonb` as a parsed value; writes take
// money as a decimal string and jsonb as JSON text, so no amount ever passes through a float.

/** Money and other exact decimals: read as the database's string, written as a decimal string. */
export type Numeric = ColumnType<string, string, string>;
/** timestamptz: read as a Date; written as a Date or an ISO-8601 string. */
export type Timestamp = ColumnType<Date, Date | string, Date | string>;
/** jsonb: read as the parsed value; written as JSON text (drivers would turn arrays into SQL arrays). */
export type Jsonb<T> = ColumnType<T, string, string>;
/** `date` and `time` columns are kept as the API's text ('2026-11-20', '19:30'). */
export type DateText = ColumnType<string, string, string>;

export type RawRecord = Record<string, unknown>;

/** What every mirror table has besides its typed columns. */
interface MirrorBookkeeping {
  raw: Jsonb<RawRecord>;
  /** How far along its state machine the record is (mirror/rank.ts). */
  rank: Generated<number>;
  /** The shared clock (the database's) taken before the upstream read that produced this copy. */
  read_at: Timestamp;
  /** When this row was last written, by the database's clock. */
  synced_at: Generated<Date>;
}

export interface OrdersTable extends MirrorBookkeeping {
  id: string;
  restaurant_id: string;
  booking_id: string | null;
  type: string;
  status: string;
  subtotal: Numeric;
  tax: Numeric;
  tip: Numeric;
  total: Numeric;
  currency: string;
  paid_at: Timestamp | null;
  refunded_at: Timestamp | null;
  created_at: Timestamp;
}

export interface OrderItemsTable {
  order_id: string;
  id: string;
  menu_item_id: string;
  name: string;
  quantity: number;
  price: Numeric;
  notes: string | null;
  /** The item's place in the order's `items` array, so reads can keep the API's order. */
  position: number;
}

export interface BookingsTable extends MirrorBookkeeping {
  id: string;
  restaurant_id: string;
  date: DateText;
  time: DateText;
  party_size: number;
  status: string;
  confirm_code: string;
  diner_name: string;
  diner_email: string;
}

/** The spec shows only price, allergens, tags and stock by name: every typed column but the keys is nullable. */
export interface MenuItemsTable extends MirrorBookkeeping {
  id: string;
  restaurant_id: string;
  name: string | null;
  price: Numeric | null;
  allergens: string[] | null;
  tags: string[] | null;
  stock: number | null;
}

export interface ReviewsTable extends MirrorBookkeeping {
  id: string;
  restaurant_id: string;
}

export type EventStatus = "received" | "handled" | "failed";
export interface HandlerOutcome {
  status: "ok" | "failed";
  error?: string;
  /** The failed handler's error's stack (bounded), when it threw an Error. */
  stack?: string;
  /** The error's first line with ids, numbers, times and hex masked (error-fingerprint.ts): what failure groups group by. */
  fingerprint?: string;
  attempts: number;
}

export interface EventsTable {
  id: string;
  type: string;
  received_at: Timestamp;
  status: EventStatus;
  payload: Jsonb<unknown>;
  /** Deliveries of this event to a worker (1 on first sight; a retry or replay adds one): every run's attempts together. */
  attempts: number;
  /** Runs after the first delivery: replays (migrations/0015_replay_runs.ts). */
  replays: Generated<number>;
  handlers: Jsonb<Record<string, HandlerOutcome>>;
  updated_at: Timestamp;
  /** The kind (orders, bookings, menu-items, reviews) of the record the payload names; generated (migrations.ts, 0013_event_records). */
  record_kind: ColumnType<string | null, never, never>;
  /** That record's id (data.id, orders also data.orderId), at most 200 characters; generated. */
  record_id: ColumnType<string | null, never, never>;
}

/** One attempt of one handler of an event (migrations.ts, 0014_handler_attempts). */
export interface HandlerAttemptsTable {
  event_id: string;
  handler_key: string;
  /** The attempt's number in its run (log lines' `attempt`, ctx.attempt). */
  attempt: number;
  /** N of "attempt n of N": the last attempt its run may reach. */
  attempts_max: number;
  /** The run: 0 for the first delivery, k for the event's k-th replay (migrations/0015_replay_runs.ts). */
  replay: Generated<number>;
  started_at: Timestamp;
  duration_ms: number;
  outcome: "ok" | "failed";
  error: string | null;
  next_retry_at: Timestamp | null;
}

export interface DatabaseSchema {
  orders: OrdersTable;
  order_items: OrderItemsTable;
  bookings: BookingsTable;
  menu_items: MenuItemsTable;
  reviews: ReviewsTable;
  events: EventsTable;
  handler_attempts: HandlerAttemptsTable;
  change_outbox: ChangeOutboxTable;
  rejected_records: RejectedRecordsTable;
  unlisted_records: UnlistedRecordsTable;
  sync_checkpoints: SyncCheckpointsTable;
  sync_liveness: SyncLivenessTable;
}

/** Changes written with the mirror, waiting for the relay (migrations.ts, 0003_change_outbox). */
export interface ChangeOutboxTable {
  /** bigserial: read back as a string by both drivers. */
  seq: Generated<string>;
  id: string;
  type: string;
  payload: Jsonb<Record<string, unknown>>;
  created_at: Generated<Date>;
  /** The W3C trace context of the write that recorded it; null when tracing was off (migrations.ts, 0008_outbox_trace). */
  traceparent: string | null;
}

/** Records the mirror refused, one row per kind and id (migrations.ts, 0004_rejected_records). */
export interface RejectedRecordsTable {
  kind: string;
  /** The record's id; escaped (and shortened with a hash) when it cannot be a key as it is. */
  id: string;
  restaurant_id: string | null;
  /** A stable reason code (mirror/postgres-values.ts UnstorableReason). */
  reason: string;
  /** The sentence naming the field and what it must be; never the value. */
  detail: string;
  /** The record as read, as JSON text with NUL and lone surrogates escaped. */
  raw: string;
  first_seen: Generated<Date>;
  last_seen: Generated<Date>;
  count: Generated<number>;
}

/** Ids events named that the API never listed in time (migrations.ts, 0009_unlisted_records). */
export interface UnlistedRecordsTable {
  kind: string;
  id: string;
  restaurant_id: string;
  event_ids: string[];
  first_noted_at: Timestamp;
  given_up_at: Generated<Date>;
  attempts: number;
}

/** Where each resumable list walk stands (migrations.ts, 0007_sync_checkpoints). */
export interface SyncCheckpointsTable {
  tier: string;
  kind: string;
  cursor: string | null;
  pass_started_at: Timestamp;
  pass_completed_at: Timestamp | null;
  /** bigint: read back as a string by both drivers. */
  records: ColumnType<string, number | string, number | string>;
  pages: number;
  first_import: boolean;
  since: string | null;
  last_complete_at: Timestamp | null;
  updated_at: Timestamp;
}

/** When the workers last ran, by mark name (migrations.ts, 0010_sync_liveness). */
export interface SyncLivenessTable {
  name: string;
  seen_at: Timestamp;
}
