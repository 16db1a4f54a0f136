import { sql, type Kysely, type Migration, type MigrationProvider } from "kysely";

// Every migration of the schema, in order. Released migrations: never edit or rename one (a
// database upgrades by name); change the schema with a new migration, appended.

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was then, not today's types
type AnyDb = Kysely<any>;

// 0001_mirror: The mirror: one table per kind, typed columns for the queries operators run, the whole record
// as read in `raw`, and the guard's bookkeeping (`rank`, `read_at`). Tables are created
// unqualified: the connection's search_path puts them in the configured schema.

// Ids compare bytewise ("C" collation): lists page by id, and the order must be the same on every
// server and in the embedded database whatever their locale.
const ID = sql`text collate "C"`;

/** The down of a migration that created these tables: drops them, in this order. */
const dropTables =
  (...tables: string[]) =>
  async (db: AnyDb) => {
    for (const table of tables) await db.schema.dropTable(table).execute();
  };

type TableBuilder = ReturnType<AnyDb["schema"]["createTable"]>;

/** A mirror table: its id and restaurant, the kind's own columns, then the guard's bookkeeping. */
const createMirrorTable = (db: AnyDb, table: string, columns: (t: TableBuilder) => TableBuilder = (t) => t) =>
  columns(
    db.schema
      .createTable(table)
      .addColumn("id", ID, (c) => c.primaryKey())
      .addColumn("restaurant_id", "text", (c) => c.notNull()),
  )
    .addColumn("raw", "jsonb", (c) => c.notNull())
    .addColumn("rank", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("read_at", "timestamptz", (c) => c.notNull())
    .addColumn("synced_at", "timestamptz", (c) => c.notNull().defaultTo(sql`clock_timestamp()`))
    .execute();

// Lists page by id within a filter, so each filter column leads an index ending in id.
const MIRROR_INDEXES: readonly [table: string, name: string, columns: string[]][] = [
  ["orders", "orders_restaurant_idx", ["restaurant_id", "id"]],
  ["orders", "orders_status_idx", ["status", "id"]],
  ["orders", "orders_created_at_idx", ["created_at"]],
  ["orders", "orders_synced_at_idx", ["synced_at"]],
  ["order_items", "order_items_menu_item_idx", ["menu_item_id"]],
  ["bookings", "bookings_restaurant_idx", ["restaurant_id", "id"]],
  ["bookings", "bookings_status_idx", ["status", "id"]],
  ["bookings", "bookings_date_idx", ["date"]],
  ["bookings", "bookings_synced_at_idx", ["synced_at"]],
  ["menu_items", "menu_items_restaurant_idx", ["restaurant_id", "id"]],
  ["menu_items", "menu_items_synced_at_idx", ["synced_at"]],
  ["reviews", "reviews_restaurant_idx", ["restaurant_id", "id"]],
  ["reviews", "reviews_synced_at_idx", ["synced_at"]],
];

async function up0001(db: AnyDb): Promise<void> {
  await createMirrorTable(db, "orders", (t) =>
    t
      .addColumn("booking_id", "text")
      .addColumn("type", "text", (c) => c.notNull())
      .addColumn("status", "text", (c) => c.notNull())
      .addColumn("subtotal", "numeric", (c) => c.notNull())
      .addColumn("tax", "numeric", (c) => c.notNull())
      .addColumn("tip", "numeric", (c) => c.notNull())
      .addColumn("total", "numeric", (c) => c.notNull())
      .addColumn("currency", "text", (c) => c.notNull())
      .addColumn("paid_at", "timestamptz")
      .addColumn("refunded_at", "timestamptz")
      .addColumn("created_at", "timestamptz", (c) => c.notNull()),
  );

  await db.schema
    .createTable("order_items")
    .addColumn("order_id", ID, (c) => c.notNull().references("orders.id").onDelete("cascade"))
    .addColumn("id", ID, (c) => c.notNull())
    .addColumn("menu_item_id", "text", (c) => c.notNull())
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("quantity", "integer", (c) => c.notNull())
    .addColumn("price", "numeric", (c) => c.notNull())
    .addColumn("notes", "text")
    .addColumn("position", "integer", (c) => c.notNull())
    .addPrimaryKeyConstraint("order_items_pkey", ["order_id", "id"])
    .execute();

  await createMirrorTable(db, "bookings", (t) =>
    t
      .addColumn("date", "date", (c) => c.notNull())
      .addColumn("time", "time", (c) => c.notNull())
      .addColumn("party_size", "integer", (c) => c.notNull())
      .addColumn("status", "text", (c) => c.notNull())
      .addColumn("confirm_code", "text", (c) => c.notNull())
      .addColumn("diner_name", "text", (c) => c.notNull())
      .addColumn("diner_email", "text", (c) => c.notNull()),
  );

  await createMirrorTable(db, "menu_items", (t) =>
    t
      .addColumn("name", "text")
      .addColumn("price", "numeric")
      .addColumn("allergens", sql`text[]`)
      .addColumn("tags", sql`text[]`)
      .addColumn("stock", "integer"),
  );

  await createMirrorTable(db, "reviews");

  for (const [table, name, columns] of MIRROR_INDEXES) await db.schema.createIndex(name).on(table).columns(columns).execute();
}

// 0002_event_log: The event log: every event a worker takes, as delivered, with each handler's outcome.

async function up0002(db: AnyDb): Promise<void> {
  await db.schema
    .createTable("events")
    .addColumn("id", sql`text collate "C"`, (c) => c.primaryKey())
    .addColumn("type", "text", (c) => c.notNull())
    // Millisecond precision, truncated (a timestamptz(3) alone would round up into the future), so
    // a JavaScript Date — a filter bound or a page cursor — holds a stored instant exactly.
    .addColumn("received_at", sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`date_trunc('milliseconds', clock_timestamp())`))
    .addColumn("status", "text", (c) =>
      c
        .notNull()
        .defaultTo("received")
        .check(sql`status in ('received', 'handled', 'failed')`),
    )
    .addColumn("payload", "jsonb", (c) => c.notNull())
    .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(1))
    .addColumn("handlers", "jsonb", (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`clock_timestamp()`))
    .execute();
  // Queries page by (received_at, id); prune walks received_at; replays filter by status and type.
  await db.schema.createIndex("events_received_at_idx").on("events").columns(["received_at", "id"]).execute();
  await db.schema.createIndex("events_status_idx").on("events").columns(["status", "received_at"]).execute();
  await db.schema
    .createIndex("events_type_idx")
    .on("events")
    .expression(sql`type text_pattern_ops, received_at`)
    .execute();
}

// 0003_change_outbox: The change outbox: one row per change a mirror write made, inserted in the write's own
// transaction, so a change is never lost between the write and the queue. The relay moves rows
// into the events queue in `seq` order and deletes them.

async function up0003(db: AnyDb): Promise<void> {
  await db.schema
    .createTable("change_outbox")
    .addColumn("seq", "bigserial", (c) => c.primaryKey())
    // The change id (chg_…): the event id and job id end to end, so a re-send is deduplicated.
    .addColumn("id", sql`text collate "C"`, (c) => c.notNull().unique())
    .addColumn("type", "text", (c) => c.notNull())
    .addColumn("payload", "jsonb", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`clock_timestamp()`))
    .execute();
}

// 0004_rejected_records: Records the mirror refused (a value PostgreSQL cannot store, a field missing or of the wrong
// type): one row per (kind, id), kept until the record reads clean again. Every text column holds
// what PostgreSQL text can hold: the record is escaped JSON text (never jsonb, which refuses what
// made the record unstorable), and an id that cannot be a key is kept escaped and shortened.

async function up0004(db: AnyDb): Promise<void> {
  await db.schema
    .createTable("rejected_records")
    .addColumn("kind", "text", (c) => c.notNull())
    .addColumn("id", sql`text collate "C"`, (c) => c.notNull())
    .addColumn("restaurant_id", "text")
    // A stable code (nul_character, invalid_timestamp, …) and the sentence naming the field.
    .addColumn("reason", "text", (c) => c.notNull())
    .addColumn("detail", "text", (c) => c.notNull())
    .addColumn("raw", "text", (c) => c.notNull())
    .addColumn("first_seen", "timestamptz", (c) => c.notNull().defaultTo(sql`clock_timestamp()`))
    .addColumn("last_seen", "timestamptz", (c) => c.notNull().defaultTo(sql`clock_timestamp()`))
    .addColumn("count", "integer", (c) => c.notNull().defaultTo(1))
    .addPrimaryKeyConstraint("rejected_records_pkey", ["kind", "id"])
    .execute();
  await db.schema.createIndex("rejected_records_last_seen_idx").on("rejected_records").column("last_seen").execute();
}

// 0005_event_log_indexes: GET /events?handler= filters on the keys of the `handlers` jsonb (`handlers ? key`, and with
// handlerStatus `handlers @> {key: {status}}`): without an index that is a scan of the whole log
// (1.0 s at 500k rows on a server). A GIN index with the default jsonb_ops answers both operators.
// (The other filters, received_at, status and type, have indexes since 0002.)

async function up0005(db: AnyDb): Promise<void> {
  await db.schema
    .createIndex("events_handlers_idx")
    .on("events")
    .using("gin")
    .expression(sql`handlers`)
    .execute();
}

// 0006_steps: Durable steps (ctx.step): one row per (event, handler, step name) holding the step's JSON
// result once it is done, so a retry or a replay of the event gets the result back instead of
// running the step again. `replay --fresh` deletes an event's rows; retention prunes by
// started_at with the event log. No foreign key to `events`: an event's row is written when its
// attempt ends, after the steps it ran.

async function up0006(db: AnyDb): Promise<void> {
  await db.schema
    .createTable("steps")
    .addColumn("event_id", sql`text collate "C"`, (c) => c.notNull())
    .addColumn("handler_key", "text", (c) => c.notNull())
    .addColumn("name", "text", (c) => c.notNull())
    // started: running, or its process died before recording the result; failed: the step's
    // function threw (nothing stored, it runs again); done: `result` holds what it returned.
    .addColumn("status", "text", (c) => c.notNull().check(sql`status in ('started', 'done', 'failed')`))
    // SQL NULL: the step returned undefined; jsonb null: it returned null.
    .addColumn("result", "jsonb")
    .addColumn("result_bytes", "integer")
    .addColumn("error", "text")
    // How many times the step's function was started: above 1 means a run after a crash or a throw.
    .addColumn("runs", "integer", (c) => c.notNull().defaultTo(1))
    .addColumn("attempt", "integer", (c) => c.notNull())
    .addColumn("started_at", "timestamptz", (c) => c.notNull().defaultTo(sql`clock_timestamp()`))
    .addColumn("finished_at", "timestamptz")
    .addColumn("duration_ms", "integer")
    .addPrimaryKeyConstraint("steps_pkey", ["event_id", "handler_key", "name"])
    .execute();
  await db.schema.createIndex("steps_started_at_idx").on("steps").column("started_at").execute();
}

// 0007_sync_checkpoints: Where each resumable walk of a whole list stands: the full reconciliation tier (`tier` full)
// and the backfill command (`tier` backfill), one row per kind. Saved after every page, so a
// crash, a Ctrl-C or the end of a bounded slice resumes at the next page instead of page one.
// `cursor` is the upstream's opaque continuation (null: the pass starts at the top, or is done).
// `first_import`: the mirror held nothing of the kind when the pass began, so its writes are
// `backfill` changes, not missed webhooks. `since`: the window a backfill was asked for.

async function up0007(db: AnyDb): Promise<void> {
  await db.schema
    .createTable("sync_checkpoints")
    .addColumn("tier", "text", (c) => c.notNull().check(sql`tier in ('full', 'backfill')`))
    .addColumn("kind", "text", (c) => c.notNull())
    .addColumn("cursor", "text")
    .addColumn("pass_started_at", "timestamptz", (c) => c.notNull())
    // null while the pass runs.
    .addColumn("pass_completed_at", "timestamptz")
    .addColumn("records", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("pages", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("first_import", "boolean", (c) => c.notNull().defaultTo(false))
    .addColumn("since", "text")
    // When the last pass that reached the end of the list completed (kept while a new one runs).
    .addColumn("last_complete_at", "timestamptz")
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`clock_timestamp()`))
    .addPrimaryKeyConstraint("sync_checkpoints_pkey", ["tier", "kind"])
    .execute();
}

// 0008_outbox_trace: The trace context of the write that recorded a change (W3C `traceparent`), null when tracing was
// off: the relay makes the change event's job part of that trace, so one trace goes from the
// webhook through the refresh to the change event's handlers.

async function up0008(db: AnyDb): Promise<void> {
  await db.schema.alterTable("change_outbox").addColumn("traceparent", "text").execute();
}

// 0009_unlisted_records: Ids an event named that the API did not list within SYNC_UNLISTED_GIVE_UP_SECONDS: the refresh
// stopped looking and reported them here (with a metric and a warning) instead of dropping them
// silently. One row per (kind, id); deleted when the record is later written to the mirror.
// (0007 and 0008 are other changes of the same release.)

async function up0009(db: AnyDb): Promise<void> {
  await db.schema
    .createTable("unlisted_records")
    .addColumn("kind", "text", (c) => c.notNull())
    .addColumn("id", sql`text collate "C"`, (c) => c.notNull())
    .addColumn("restaurant_id", "text", (c) => c.notNull())
    // The first events that named the id (at most 20).
    .addColumn("event_ids", sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'`))
    .addColumn("first_noted_at", "timestamptz", (c) => c.notNull())
    .addColumn("given_up_at", "timestamptz", (c) => c.notNull().defaultTo(sql`clock_timestamp()`))
    // Refresh rounds that looked for it.
    .addColumn("attempts", "integer", (c) => c.notNull())
    .addPrimaryKeyConstraint("unlisted_records_pkey", ["kind", "id"])
    .execute();
  await db.schema.createIndex("unlisted_records_given_up_at_idx").on("unlisted_records").column("given_up_at").execute();
}

// 0010_sync_liveness: When the workers last ran (one row per mark, `seen_at` by the database's clock), kept in
// PostgreSQL because it must outlive Redis: a worker that starts, or ticks, and finds the mark
// old knows that webhooks may have been lost meanwhile and catches up (worker/worker-lifecycle.ts).

async function up0010(db: AnyDb): Promise<void> {
  await db.schema
    .createTable("sync_liveness")
    .addColumn("name", "text", (c) => c.primaryKey())
    .addColumn("seen_at", "timestamptz", (c) => c.notNull())
    .execute();
}

// 0011_handler_key_renames: Handler keys were positional (`user:order.created:0`, the first handler of that type from that
// source) and are now named (`user:order.created`, `user:order.created:audit`), so reordering a
// HANDLERS_MODULE no longer hands one handler's step records to another. SQL cannot know a
// handler's name (it is in the module), so step records are rewritten when the worker starts with
// the module loaded (mirror/event-log.ts). This table records each rename done, so each
// is done once, by one worker, however many start together.

async function up0011(db: AnyDb): Promise<void> {
  await db.schema
    .createTable("handler_key_renames")
    .addColumn("from_key", "text", (c) => c.primaryKey())
    .addColumn("to_key", "text", (c) => c.notNull())
    // How many step records the rename moved.
    .addColumn("steps", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("renamed_at", "timestamptz", (c) => c.notNull().defaultTo(sql`clock_timestamp()`))
    .execute();
}

// 0013_event_records: The record each event names, so "everything about order ord_X" is an index lookup rather than a
// scan of every payload: `record_kind` as the mirror names kinds (orders, bookings, menu-items,
// reviews) from the type's family (a change.* event: from its data.kind), `record_id` from
// data.id (orders also data.orderId), at most 200 characters; NULL when the event names none.
// Generated columns: PostgreSQL fills them on every insert and, as the column is added, for every
// row already logged (a rewrite of the table, once). (0010–0012 are other changes of the release.)

const KIND = sql`case
    when type like 'order.%' then 'orders'
    when type like 'booking.%' then 'bookings'
    when type like 'menu\\_item.%' then 'menu-items'
    when type like 'review.%' then 'reviews'
    when type like 'change.%' then case payload -> 'data' ->> 'kind'
      when 'order' then 'orders' when 'booking' then 'bookings' when 'menu_item' then 'menu-items' end
  end`;
const NAMED_ID = sql`coalesce(payload -> 'data' ->> 'id', case when type like 'order.%' then payload -> 'data' ->> 'orderId' end)`;
const RECORD_ID = sql`case when (${KIND}) is not null and length(${NAMED_ID}) between 1 and 200 then ${NAMED_ID} end`;

async function up0013(db: AnyDb): Promise<void> {
  await db.schema
    .alterTable("events")
    .addColumn("record_kind", "text", (c) => c.generatedAlwaysAs(KIND).stored())
    .execute();
  await db.schema
    .alterTable("events")
    .addColumn("record_id", sql`text collate "C"`, (c) => c.generatedAlwaysAs(RECORD_ID).stored())
    .execute();
  // A record's timeline (newest first) and "which kind holds this id" (the console's search).
  await db.schema
    .createIndex("events_record_idx")
    .on("events")
    .expression(sql`record_id, record_kind, received_at desc, id desc`)
    .where(sql.ref("record_id"), "is not", null)
    .execute();
}

async function down0013(db: AnyDb): Promise<void> {
  await db.schema.dropIndex("events_record_idx").execute();
  await db.schema.alterTable("events").dropColumn("record_id").dropColumn("record_kind").execute();
}

// 0014_handler_attempts: Every attempt of every handler of an event, one row each: when it started, how long it ran, its
// outcome and error, when the next attempt comes and "attempt n of N". Written in the statement
// that records the attempt in `events`, and deleted with the event by retention (prune). The
// attempt number runs on across retries and replays, as log lines and ctx.attempt number them;
// each handler keeps its latest KEPT_ATTEMPTS_PER_HANDLER (event-log.ts) rows, so a replay
// loop cannot grow an event without end. No foreign key: the writes of the hot path stay one
// insert without a check against `events`, and prune deletes both in one statement. (Named 0014,
// not the unused 0012: Kysely applies migrations in name order and refuses one that sorts before
// a migration the database already ran.)

async function up0014(db: AnyDb): Promise<void> {
  await db.schema
    .createTable("handler_attempts")
    .addColumn("event_id", sql`text collate "C"`, (c) => c.notNull())
    .addColumn("handler_key", "text", (c) => c.notNull())
    .addColumn("attempt", "integer", (c) => c.notNull())
    // N of "attempt n of N": the last attempt its round may reach (a replay's round numbers on).
    .addColumn("attempts_max", "integer", (c) => c.notNull())
    .addColumn("started_at", "timestamptz", (c) => c.notNull())
    .addColumn("duration_ms", "integer", (c) => c.notNull())
    .addColumn("outcome", "text", (c) => c.notNull().check(sql`outcome in ('ok', 'failed')`))
    // The handler's error, bounded as the event's own outcome is (events/errors.ts).
    .addColumn("error", "text")
    // When the next attempt is due; null when none follows (it succeeded, or failed for good).
    .addColumn("next_retry_at", "timestamptz")
    // With its start: two replays of an event that run at once both number on from the same
    // count, as their log lines do, and both are kept; a run recorded again replaces its row.
    .addPrimaryKeyConstraint("handler_attempts_pkey", ["event_id", "handler_key", "attempt", "started_at"])
    .execute();
}

// 0015_replay_runs: A replay is a run of its own: its attempts number from 1 to JOB_ATTEMPTS again
// ("attempt n of N, replay k"), as Svix's and Hookdeck's manual retries are attempts of their own
// kind. `events.replays` counts the event's runs after its first delivery (the statement recording
// a replay's first attempt adds one), and each handler attempt names the run it belongs to (0: the
// first delivery). Rows recorded before are runs of 0: their numbers ran on across replays, and
// stay as written.

async function up0015(db: AnyDb): Promise<void> {
  await db.schema
    .alterTable("events")
    .addColumn("replays", "integer", (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable("handler_attempts")
    .addColumn("replay", "integer", (c) => c.notNull().defaultTo(0))
    .execute();
}

async function down0015(db: AnyDb): Promise<void> {
  await db.schema.alterTable("handler_attempts").dropColumn("replay").execute();
  await db.schema.alterTable("events").dropColumn("replays").execute();
}

// 0016_event_jobs: The BullMQ job an event's next attempt runs in (the ingest stream entry's id for a
// first delivery's retry, the job's own id otherwise), recorded with each attempt: once Redis lost
// its data, the worker enqueues a waiting event again under that same id (events-queue.ts
// createJobRestorer), so a job that still exists is never doubled. Null for attempts recorded before.

async function up0016(db: AnyDb): Promise<void> {
  await db.schema.alterTable("events").addColumn("job_id", "text").execute();
}

// 0017_accounts: Several restaurant companies (accounts) share one database, and ids are unique
// only within one company (the sandbox repeats restaurant ids across companies). Every per-company
// table gains `account_id`, and it leads every key and index, so each company's reads are range
// scans of its own and two companies' equal ids are two rows. Rows already stored become account
// `default` through the column's default (no rewrite: PostgreSQL stores a constant default once).
// The default stays in the schema so a row inserted without naming an account (a plain insert of the
// previous release, such as the change outbox's, or an operator's hand-written SQL) still lands in
// `default`; the stores always write it explicitly. The previous release's upserts name
// `on conflict (id)`, which no key matches any more: its processes stop before this migration runs
// rather than write beside the new ones. Global tables stay as they are: sync_liveness marks the workers, not a company, and
// handler_key_renames records renames of handler keys, which every company's handlers share.
// The GIN index on events.handlers cannot lead with a text column without the btree_gin extension
// (not in every PostgreSQL install): it stays as it is, and a filter on it is combined with the
// account's leading index (a bitmap AND).

/** One per-company table's key and indexes, before (`account` false) or after this migration. */
interface AccountTable {
  table: string;
  /** Its primary key's columns (the key is named `<table>_pkey`). */
  key: string[];
  /** Its other unique constraints (change_outbox's change id). */
  uniques?: { name: string; columns: string[] }[];
  /** Btree indexes: columns, or an expression with an optional partial-index predicate. */
  indexes?: { name: string; columns?: string[]; expression?: string; where?: string }[];
}

/** The indexes 0001_mirror made on a mirror table. */
const mirrorIndexes = (table: string) => MIRROR_INDEXES.filter(([t]) => t === table).map(([, name, columns]) => ({ name, columns }));

const ACCOUNT_TABLES: readonly AccountTable[] = [
  { table: "orders", key: ["id"], indexes: mirrorIndexes("orders") },
  { table: "order_items", key: ["order_id", "id"], indexes: mirrorIndexes("order_items") },
  { table: "bookings", key: ["id"], indexes: mirrorIndexes("bookings") },
  { table: "menu_items", key: ["id"], indexes: mirrorIndexes("menu_items") },
  { table: "reviews", key: ["id"], indexes: mirrorIndexes("reviews") },
  {
    table: "events",
    key: ["id"],
    indexes: [
      { name: "events_received_at_idx", columns: ["received_at", "id"] },
      { name: "events_status_idx", columns: ["status", "received_at"] },
      { name: "events_type_idx", expression: "type text_pattern_ops, received_at" },
      { name: "events_record_idx", expression: "record_id, record_kind, received_at desc, id desc", where: "record_id is not null" },
    ],
  },
  { table: "handler_attempts", key: ["event_id", "handler_key", "attempt", "started_at"] },
  { table: "change_outbox", key: ["seq"], uniques: [{ name: "change_outbox_id_key", columns: ["id"] }] },
  { table: "rejected_records", key: ["kind", "id"], indexes: [{ name: "rejected_records_last_seen_idx", columns: ["last_seen"] }] },
  { table: "unlisted_records", key: ["kind", "id"], indexes: [{ name: "unlisted_records_given_up_at_idx", columns: ["given_up_at"] }] },
  { table: "sync_checkpoints", key: ["tier", "kind"] },
  { table: "steps", key: ["event_id", "handler_key", "name"], indexes: [{ name: "steps_started_at_idx", columns: ["started_at"] }] },
];

/** The tables that hold a company's data, keyed by account: what purging an account deletes (accounts.ts). */
export const ACCOUNT_TABLE_NAMES: readonly string[] = [...ACCOUNT_TABLES.map((t) => t.table), "record_changes"];

/** The foreign key from a line item to its order (named by PostgreSQL in 0001_mirror). */
const ORDER_ITEMS_FK = "order_items_order_id_fkey";

/** Drops a table's key, unique constraints and indexes, and makes them again over `lead` and their columns. */
async function rekey(db: AnyDb, t: AccountTable, lead: string[]): Promise<void> {
  const cols = (columns: string[]) => sql.join([...lead, ...columns].map((c) => sql.ref(c)));
  const table = sql.table(t.table);
  const key = sql.ref(`${t.table}_pkey`);
  for (const index of t.indexes ?? []) await db.schema.dropIndex(index.name).execute();
  for (const unique of t.uniques ?? []) await sql`alter table ${table} drop constraint ${sql.ref(unique.name)}`.execute(db);
  await sql`alter table ${table} drop constraint ${key}`.execute(db);
  await sql`alter table ${table} add constraint ${key} primary key (${cols(t.key)})`.execute(db);
  for (const unique of t.uniques ?? [])
    await sql`alter table ${table} add constraint ${sql.ref(unique.name)} unique (${cols(unique.columns)})`.execute(db);
  for (const index of t.indexes ?? []) {
    const on = index.expression === undefined ? cols(index.columns ?? []) : sql.raw([...lead, index.expression].join(", "));
    const where = index.where === undefined ? sql`` : sql` where ${sql.raw(index.where)}`;
    await sql`create index ${sql.ref(index.name)} on ${table} (${on})${where}`.execute(db);
  }
}

async function up0017(db: AnyDb): Promise<void> {
  // The line items' reference names the orders' key, which is about to change: it follows below.
  await sql`alter table order_items drop constraint ${sql.ref(ORDER_ITEMS_FK)}`.execute(db);
  for (const t of ACCOUNT_TABLES) {
    await db.schema
      .alterTable(t.table)
      .addColumn("account_id", ID, (c) => c.notNull().defaultTo("default"))
      .execute();
    await rekey(db, t, ["account_id"]);
  }
  await sql`alter table order_items add constraint ${sql.ref(ORDER_ITEMS_FK)} foreign key (account_id, order_id)
    references orders (account_id, id) on delete cascade`.execute(db);
}

/** Back to one company: fails on ids that two accounts share (a key can hold one). */
async function down0017(db: AnyDb): Promise<void> {
  await sql`alter table order_items drop constraint ${sql.ref(ORDER_ITEMS_FK)}`.execute(db);
  for (const t of ACCOUNT_TABLES) {
    await rekey(db, t, []);
    await db.schema.alterTable(t.table).dropColumn("account_id").execute();
  }
  await sql`alter table order_items add constraint ${sql.ref(ORDER_ITEMS_FK)} foreign key (order_id)
    references orders (id) on delete cascade`.execute(db);
}

/**
 * Line items keep no foreign key to their order. PostgreSQL plans a key's check once per
 * connection, at its first use: on a mirror still empty every index that leads with `account_id`
 * costs the same, and it may pick one that reads the account's whole list of orders for each
 * item (`orders_synced_at_idx`, seen), so a first import slows with every page it writes (20,000
 * orders read unmetered: 60 s and 99 s of statement time with the key, 13 s and 5 s without).
 * Items are written only with their order, in the one transaction of its write (mirror-store.ts
 * `upsertRows`), and deleted only with it: there, or with their account (`purge`).
 */
async function up0025(db: AnyDb): Promise<void> {
  await sql`alter table order_items drop constraint ${sql.ref(ORDER_ITEMS_FK)}`.execute(db);
}

async function down0025(db: AnyDb): Promise<void> {
  await sql`alter table order_items add constraint ${sql.ref(ORDER_ITEMS_FK)} foreign key (account_id, order_id)
    references orders (account_id, id) on delete cascade`.execute(db);
}

/** The accounts registry: a company's key and signing secrets, each value sealed with SECRETS_KEY (accounts.ts). */
async function up0018(db: AnyDb): Promise<void> {
  await db.schema
    .createTable("accounts")
    .addColumn("id", ID, (c) => c.primaryKey())
    .addColumn("api_key", "text", (c) => c.notNull())
    .addColumn("signing_secrets", sql`text[]`, (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`clock_timestamp()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`clock_timestamp()`))
    .execute();
}

/**
 * One relay drains every account's changes, oldest first (change-outbox.ts): its read in `seq`
 * order and its delete by `seq` need an index on `seq` alone (the key leads with the account).
 */
async function up0019(db: AnyDb): Promise<void> {
  await db.schema.createIndex("change_outbox_seq_idx").on("change_outbox").column("seq").execute();
}

// 0023_account_incarnation: An account id can be removed and added again, for the same company or
// another. Each registration gets its own `incarnation` (random, so a restored backup never hands
// out one used before): what arrives for an account carries the incarnation it arrived under, and
// whatever no longer matches the registered one is dropped (accounts.ts `belongsToAccount`). The
// trigger is the database's own guard, as a foreign key's check is: a row of a registered account
// is written only while the account's row exists, under a FOR KEY SHARE lock that a removal's
// delete waits for (and that waits for a removal in progress), so a write racing a purge either
// commits before the purge deletes the account's rows or is not stored at all. `default` (the env
// company) has no row and is never checked.

/** Where the guard is attached: every per-company table as 0017 keyed them (written out: a released migration never changes). */
const GUARDED_TABLES = [
  "orders",
  "order_items",
  "bookings",
  "menu_items",
  "reviews",
  "events",
  "handler_attempts",
  "change_outbox",
  "rejected_records",
  "unlisted_records",
  "sync_checkpoints",
  "steps",
];

async function up0023(db: AnyDb): Promise<void> {
  await sql`alter table accounts add column incarnation text not null
    default left(replace(gen_random_uuid()::text, '-', ''), 12)`.execute(db);
  // search_path fixed to the schema the migration runs in: the trigger finds `accounts` in it whoever writes.
  await sql`create function only_registered_accounts() returns trigger language plpgsql
    set search_path from current as $$
    begin
      perform 1 from accounts where id = new.account_id for key share;
      if found then return new; end if;
      return null;
    end $$`.execute(db);
  for (const table of GUARDED_TABLES)
    // `default`'s rows (the bulk of most deployments) are let through by the WHEN clause, without calling the function.
    await sql`create trigger ${sql.ref(`${table}_only_registered_accounts`)} before insert or update on ${sql.table(table)}
      for each row when (new.account_id <> 'default') execute function only_registered_accounts()`.execute(db);
}

async function down0023(db: AnyDb): Promise<void> {
  for (const table of GUARDED_TABLES)
    await sql`drop trigger ${sql.ref(`${table}_only_registered_accounts`)} on ${sql.table(table)}`.execute(db);
  await sql`drop function only_registered_accounts()`.execute(db);
  await db.schema.alterTable("accounts").dropColumn("incarnation").execute();
}

/**
 * An account may name its own URL for problem notifications (src/alerts), beside the deployment's
 * ALERT_WEBHOOK_URL: sealed like its key (a Slack incoming-webhook URL is the credential itself),
 * null for an account that has none.
 */
async function up0021(db: AnyDb): Promise<void> {
  await db.schema.alterTable("accounts").addColumn("alert_url", "text").execute();
}

/**
 * Problems (src/problems/problem-store.ts): one row per (account, kind, subject), the account ''
 * for what belongs to the deployment. A row is opened again in place when its fault returns; the
 * announced marks say which of its transitions reached the alerts, so a restart announces only
 * the others.
 */
async function up0020(db: AnyDb): Promise<void> {
  await db.schema
    .createTable("problems")
    .addColumn("account_id", ID, (c) => c.notNull())
    .addColumn("kind", "text", (c) => c.notNull())
    .addColumn("subject", ID, (c) => c.notNull())
    .addColumn("id", "text", (c) => c.notNull().unique())
    .addColumn("state", "text", (c) => c.notNull().check(sql`state in ('open', 'resolved')`))
    .addColumn("opened_at", "timestamptz", (c) => c.notNull())
    .addColumn("resolved_at", "timestamptz")
    .addColumn("last_seen_at", "timestamptz", (c) => c.notNull())
    .addColumn("count", "bigint", (c) => c.notNull().defaultTo(1))
    .addColumn("cause", "text", (c) => c.notNull())
    .addColumn("opened_announced_at", "timestamptz")
    .addColumn("resolved_announced_at", "timestamptz")
    .addPrimaryKeyConstraint("problems_pkey", ["account_id", "kind", "subject"])
    .execute();
  // What GET /problems and the worker's announcer ask for first: the open ones, and the unannounced.
  await db.schema.createIndex("problems_state_idx").on("problems").columns(["state", "opened_at"]).execute();
}

/**
 * 0024_cursor_guard: A full pass's cursor cycle guard (Brent's detector, upstream/paginate.ts), saved with its cursor after
 * every page so the guard spans the pass's slices: a cycle longer than one slice is caught, not
 * walked until the page cap. Null at the top of a pass and once it ended.
 */
async function up0024(db: AnyDb): Promise<void> {
  await db.schema.alterTable("sync_checkpoints").addColumn("cursor_guard", "jsonb").execute();
}

/**
 * 0024_record_changes: The changes no handler receives (change-outbox.ts): never an event, but still
 * a record's history, so its story (record-story.ts) shows every change with its before and
 * after. A first import's record is one compact "imported" entry. Pruned with the event log.
 */
async function up0024RecordChanges(db: AnyDb): Promise<void> {
  await db.schema
    .createTable("record_changes")
    .addColumn("account_id", ID, (c) => c.notNull())
    .addColumn("id", "text", (c) => c.notNull())
    .addColumn("type", "text", (c) => c.notNull())
    .addColumn("record_kind", "text", (c) => c.notNull())
    .addColumn("record_id", sql`text collate "C"`, (c) => c.notNull())
    .addColumn("payload", "jsonb", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`clock_timestamp()`))
    .addPrimaryKeyConstraint("record_changes_pkey", ["account_id", "id"])
    .execute();
  await db.schema
    .createIndex("record_changes_record_idx")
    .on("record_changes")
    .expression(sql`account_id, record_id, record_kind, created_at desc, id desc`)
    .execute();
  await db.schema.createIndex("record_changes_created_at_idx").on("record_changes").columns(["account_id", "created_at"]).execute();
}

/** How each account signs its deliveries (accounts.ts): every account so far signs as the upstream does. */
async function up0022(db: AnyDb): Promise<void> {
  await db.schema
    .alterTable("accounts")
    .addColumn("signature_scheme", "text", (c) => c.notNull().defaultTo("svc"))
    .execute();
}

/**
 * Every migration, by name, in one static list so the same list runs from `src/` under tsx and
 * from `dist/` (a folder scan would depend on file extensions and the working directory).
 * Append new migrations; never edit or rename a released one.
 */
export const MIGRATIONS: Readonly<Record<string, Migration>> = {
  "0001_mirror": { up: up0001, down: dropTables("order_items", "orders", "bookings", "menu_items", "reviews") },
  "0002_event_log": { up: up0002, down: dropTables("events") },
  "0003_change_outbox": { up: up0003, down: dropTables("change_outbox") },
  "0004_rejected_records": { up: up0004, down: dropTables("rejected_records") },
  "0005_event_log_indexes": { up: up0005, down: (db) => db.schema.dropIndex("events_handlers_idx").execute() },
  "0006_steps": { up: up0006, down: dropTables("steps") },
  "0007_sync_checkpoints": { up: up0007, down: dropTables("sync_checkpoints") },
  "0008_outbox_trace": { up: up0008, down: (db) => db.schema.alterTable("change_outbox").dropColumn("traceparent").execute() },
  "0009_unlisted_records": { up: up0009, down: dropTables("unlisted_records") },
  "0010_sync_liveness": { up: up0010, down: dropTables("sync_liveness") },
  "0011_handler_key_renames": { up: up0011, down: dropTables("handler_key_renames") },
  "0013_event_records": { up: up0013, down: down0013 },
  "0014_handler_attempts": { up: up0014, down: dropTables("handler_attempts") },
  "0015_replay_runs": { up: up0015, down: down0015 },
  "0016_event_jobs": { up: up0016, down: (db) => db.schema.alterTable("events").dropColumn("job_id").execute() },
  "0017_accounts": { up: up0017, down: down0017 },
  "0018_account_registry": { up: up0018, down: dropTables("accounts") },
  "0019_outbox_relay_order": { up: up0019, down: (db) => db.schema.dropIndex("change_outbox_seq_idx").execute() },
  "0020_problems": { up: up0020, down: dropTables("problems") },
  "0021_account_alert_url": { up: up0021, down: (db) => db.schema.alterTable("accounts").dropColumn("alert_url").execute() },
  "0022_account_signature_scheme": {
    up: up0022,
    down: (db) => db.schema.alterTable("accounts").dropColumn("signature_scheme").execute(),
  },
  "0023_account_incarnation": { up: up0023, down: down0023 },
  "0024_cursor_guard": { up: up0024, down: (db) => db.schema.alterTable("sync_checkpoints").dropColumn("cursor_guard").execute() },
  "0024_record_changes": { up: up0024RecordChanges, down: dropTables("record_changes") },
  "0025_order_items_unreferenced": { up: up0025, down: down0025 },
};

/** A provider of the first `count` migrations (all by default); tests use it to stop at an older version. */
export function staticMigrationProvider(count = Object.keys(MIGRATIONS).length): MigrationProvider {
  const selected = Object.fromEntries(Object.entries(MIGRATIONS).slice(0, count));
  return { getMigrations: () => Promise.resolve(selected) };
}
