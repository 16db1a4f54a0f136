import {
  type ColumnType,
  type Generated,
  Kysely,
  PostgresDialect,
  type RawBuilder,
  sql,
  type DatabaseIntrospector,
  type DatabaseMetadata,
  type SchemaMetadata,
  type TableMetadata,
  Migrator,
  type MigrationResult,
} from "kysely";
import pg from "pg";
import { existsSync } from "node:fs";
import { DataDirLockedError, embeddedDirectory, runningEmbeddedServer, startEmbeddedServer } from "./embedded-server.js";
import { staticMigrationProvider } from "./migrations.js";
import { NamedError } from "../errors.js";
import type { CursorCycleGuard } from "../upstream/paginate.js";

// The tables as Kysely sees them (docs: migrations.ts, 0001_mirror and 0002_event_log are the
// truth; these types follow them). node-postgres reads `numeric` as a string ('12.30'),
// `timestamptz` as a Date, `text[]` as an array and `jsonb` as a parsed value; writes take
// money as a decimal string and jsonb as JSON text, so no amount ever passes through a float.

/** Money and other exact decimals: read as the database's string, written as a decimal string. */
type Numeric = ColumnType<string, string, string>;
/** timestamptz: read as a Date; written as a Date or an ISO-8601 string. */
type Timestamp = ColumnType<Date, Date | string, Date | string>;
/** jsonb: read as the parsed value; written as JSON text (drivers would turn arrays into SQL arrays). */
type Jsonb<T> = ColumnType<T, string, string>;
/** `date` and `time` columns are kept as the API's text ('2026-11-20', '19:30'). */
type DateText = ColumnType<string, string, string>;

type RawRecord = Record<string, unknown>;

/**
 * The company a row belongs to (migrations.ts, 0017_accounts): ids are unique only within one.
 * Required on insert, so a store that forgets to scope a write fails to compile rather than
 * filing the row under the schema's default; never updated (a row does not change company).
 */
type AccountId = ColumnType<string, string, never>;

/** Every per-company table's leading key column. */
interface OfAccount {
  account_id: AccountId;
}

/** What every mirror table has: the record's keys, and besides its typed columns the record whole and the guard's bookkeeping. */
interface MirrorBookkeeping extends OfAccount {
  id: string;
  restaurant_id: string;
  raw: Jsonb<RawRecord>;
  /** How far along its state machine the record is (mirror/mirror-store.ts). */
  rank: Generated<number>;
  /** The shared clock (the database's) taken before the upstream read that produced this copy. */
  read_at: Timestamp;
  /** When this row was last written, by the database's clock. */
  synced_at: Generated<Date>;
}

export interface OrdersTable extends MirrorBookkeeping {
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

export interface OrderItemsTable extends OfAccount {
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
  name: string | null;
  price: Numeric | null;
  allergens: string[] | null;
  tags: string[] | null;
  stock: number | null;
}

export type ReviewsTable = MirrorBookkeeping;

/** An event's status in the log (the `events.status` check of migrations.ts, 0002_event_log). */
export const EVENT_STATUSES = ["received", "handled", "failed"] as const;
export type EventStatus = (typeof EVENT_STATUSES)[number];
/** A handler's outcome in one attempt (the `handler_attempts.outcome` check of migrations.ts, 0014_handler_attempts). */
export const HANDLER_STATUSES = ["ok", "failed"] as const;
export type HandlerStatus = (typeof HANDLER_STATUSES)[number];
export interface HandlerOutcome {
  status: HandlerStatus;
  error?: string;
  /** The failed handler's error's stack (bounded), when it threw an Error. */
  stack?: string;
  /** The error's first line with ids, numbers, times and hex masked (event-log.ts): what failure groups group by. */
  fingerprint?: string;
  attempts: number;
}

export interface EventsTable extends OfAccount {
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
  /** The BullMQ job the event's next attempt runs in, as its latest attempt named it (migrations.ts, 0016_event_jobs). */
  job_id: ColumnType<string | null, string | null | undefined, string | null>;
}

/** One attempt of one handler of an event (migrations.ts, 0014_handler_attempts). */
interface HandlerAttemptsTable extends OfAccount {
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
  outcome: HandlerStatus;
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
  record_changes: RecordChangesTable;
  rejected_records: RejectedRecordsTable;
  unlisted_records: UnlistedRecordsTable;
  sync_checkpoints: SyncCheckpointsTable;
  sync_liveness: SyncLivenessTable;
  accounts: AccountsTable;
  problems: ProblemsTable;
}

/** Problems, one row per (account, kind, subject) (src/problems/problem-store.ts; migrations.ts, 0020_problems). */
export interface ProblemsTable {
  /** '' for the deployment's own (the API's address, the database). */
  account_id: string;
  kind: string;
  subject: string;
  id: string;
  state: string;
  opened_at: Timestamp;
  resolved_at: Timestamp | null;
  last_seen_at: Timestamp;
  /** bigint: read back as a string (node-postgres's int8). */
  count: ColumnType<string, number | string, number | string>;
  cause: string;
  opened_announced_at: Timestamp | null;
  resolved_announced_at: Timestamp | null;
}

/** The companies served besides `default`, their key and secrets sealed (accounts.ts; migrations.ts, 0018_account_registry). */
interface AccountsTable {
  id: string;
  /** Sealed with SECRETS_KEY (accounts.ts createSecretsBox). */
  api_key: string;
  /** Sealed each, the newest first. */
  signing_secrets: string[];
  /** Where the account's problem notifications also go, sealed (a Slack URL is its own credential); null: only the deployment's (0021_account_alert_url). */
  alert_url: ColumnType<string | null, string | null | undefined, string | null>;
  /** This registration of the id (0023_account_incarnation): a removal and a new add give another. */
  incarnation: Generated<string>;
  /** How the company signs: a SignatureScheme, `svc` or `standard-webhooks` (0022_account_signature_scheme; accounts.ts checks it). */
  signature_scheme: Generated<string>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

/** Changes no handler receives, kept as their records' history (migrations.ts, 0024_record_changes). */
interface RecordChangesTable extends OfAccount {
  /** The change id (`chg_…`), as an event's would be. */
  id: string;
  type: string;
  /** The mirror kind (`orders`), as `events.record_kind`. */
  record_kind: string;
  record_id: string;
  /** The change's data (`ChangeData`); a first import's record: no before, after or fields ("imported"). */
  payload: Jsonb<Record<string, unknown>>;
  created_at: Generated<Date>;
}

/** Changes written with the mirror, waiting for the relay (migrations.ts, 0003_change_outbox). */
interface ChangeOutboxTable extends OfAccount {
  /** bigserial: read back as a string (node-postgres's int8). */
  seq: Generated<string>;
  id: string;
  type: string;
  payload: Jsonb<Record<string, unknown>>;
  created_at: Generated<Date>;
  /** The W3C trace context of the write that recorded it; null when tracing was off (migrations.ts, 0008_outbox_trace). */
  traceparent: string | null;
}

/** Records the mirror refused, one row per kind and id (migrations.ts, 0004_rejected_records). */
interface RejectedRecordsTable extends OfAccount {
  kind: string;
  /** The record's id; escaped (and shortened with a hash) when it cannot be a key as it is. */
  id: string;
  restaurant_id: string | null;
  /** A stable reason code (mirror/values.ts UnstorableReason). */
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
interface UnlistedRecordsTable extends OfAccount {
  kind: string;
  id: string;
  restaurant_id: string;
  event_ids: string[];
  first_noted_at: Timestamp;
  given_up_at: Generated<Date>;
  attempts: number;
}

/** Where each resumable list walk stands (migrations.ts, 0007_sync_checkpoints). */
interface SyncCheckpointsTable extends OfAccount {
  tier: string;
  kind: string;
  cursor: string | null;
  pass_started_at: Timestamp;
  pass_completed_at: Timestamp | null;
  /** bigint: read back as a string (node-postgres's int8). */
  records: ColumnType<string, number | string, number | string>;
  pages: number;
  first_import: boolean;
  since: string | null;
  last_complete_at: Timestamp | null;
  updated_at: Timestamp;
  /** The pass's cursor cycle guard as of `cursor` (migrations.ts, 0024_cursor_guard). */
  cursor_guard: ColumnType<CursorCycleGuard | null, string | null | undefined, string | null>;
}

/** When the workers last ran, by mark name (migrations.ts, 0010_sync_liveness). */
interface SyncLivenessTable {
  name: string;
  seen_at: Timestamp;
}

/** An upsert's `do update set` of these columns: each takes the value the insert proposed (`excluded.<column>`). */
export const fromExcluded = (columns: readonly string[]): Record<string, RawBuilder<unknown>> =>
  Object.fromEntries(columns.map((c) => [c, sql.ref(`excluded.${c}`)]));

/** What the mirror keeps: the API's resources as last read, and reviews as delivered. */

import { DEFAULTS } from "../config/defaults.js";
import type { Logger } from "../logging/logger.js";

export interface DatabaseOptions {
  /** postgres://… of a PostgreSQL server. Without it: the embedded server on `dataDir`. */
  url?: string;
  /** Where the embedded database keeps its files (embedded-server.ts). */
  dataDir: string;
  /** The schema every table lives in (DATABASE_SCHEMA, default `svc`). */
  schema?: string;
  logger?: Logger;
  /** Connections in the server pool. Default 10. */
  poolSize?: number;
  /** Operator reads (`operatorDb`) end after this long: each statement is cancelled (statement_timeout). Default 5000. */
  operatorQueryTimeoutMs?: number;
  /** Embedded only: a data directory whose initdb'd cluster (and password) to copy on first use instead of running initdb (tests). */
  embeddedTemplate?: string;
  /**
   * Embedded only: when another process (the running service) holds `dataDir`, connect to its
   * server as a client instead of refusing. For one-off commands (the CLI), never for a service:
   * two services on one directory stay refused.
   */
  attach?: boolean;
}

export interface Database {
  db: Kysely<DatabaseSchema>;
  /**
   * For operator reads (GET /events, /mirror): a pool of its own (OPERATOR_POOL_SIZE connections,
   * statement_timeout set), so a slow read neither holds the worker's connections nor runs unbounded.
   */
  operatorDb: Kysely<DatabaseSchema>;
  operatorQueryTimeoutMs: number;
  driver: "server" | "embedded";
  schema: string;
  /** Where it is, fit to print: the server's host, port and database (never its user or password), or the data directory. */
  location: string;
  close(): Promise<void>;
}

/** A bad DATABASE_URL / DATABASE_SCHEMA: raised before any connection, never echoing the URL. */
export class DatabaseConfigError extends NamedError {
  readonly code = "database_config";
}

const DEFAULT_SCHEMA = "svc";
/** Connections of the operator-read pool: reads queue there, never in the worker's pool. */
const OPERATOR_POOL_SIZE = 2;
// Lower-case so it needs no quoting anywhere (psql, search_path, other tools); no pg_ prefix (reserved).
const SCHEMA_NAME = /^(?!pg_)[a-z_][a-z0-9_]{0,62}$/;

/** Whether opening these settings finds a database rather than creating one: a server, or an embedded cluster already there. */
export const embeddedDatabaseExists = ({ url, dataDir }: { url?: string | undefined; dataDir: string }): boolean =>
  Boolean(url) || existsSync(embeddedDirectory(dataDir));

/**
 * Opens the service's database: node-postgres pools on a server when `url` is given, else on the
 * embedded server this process starts on `dataDir` (embedded-server.ts). Either way every
 * connection's search_path is the configured schema, so queries and migrations name tables
 * unqualified. Call `migrateToLatest` before use.
 */
export async function createDatabase(options: DatabaseOptions): Promise<Database> {
  const schema = options.schema ?? DEFAULT_SCHEMA;
  if (!SCHEMA_NAME.test(schema))
    throw new DatabaseConfigError(
      `DATABASE_SCHEMA must be a lower-case identifier (letters, digits, _; at most 63; not pg_…), got ${JSON.stringify(schema.slice(0, 80))}`,
    );
  if (options.url !== undefined && options.url !== "")
    return openPools({ connectionString: options.url }, serverLocation(options.url), schema, options);
  const embedded = (server: { socketDir: string; port: number; password: string | undefined }) =>
    openPools(
      { host: server.socketDir, port: server.port, user: "postgres", password: server.password, database: "postgres" },
      options.dataDir,
      schema,
      {
        ...options,
        poolSize: options.poolSize ?? EMBEDDED_POOL_SIZE,
      },
    );
  let server;
  try {
    server = await startEmbeddedServer(options.dataDir, { logger: options.logger, template: options.embeddedTemplate });
  } catch (err) {
    if (options.attach && err instanceof DataDirLockedError) return embedded(runningEmbeddedServer(options.dataDir, err));
    throw err;
  }
  const database = embedded(server);
  return { ...database, close: () => database.close().finally(() => server.stop()) };
}

/** The worker's pool on the embedded server: each connection is a server process (~5–10 MB), and one VM's worker needs few. */
const EMBEDDED_POOL_SIZE = 5;

/** The server's host and database, fit for log lines: never the user or password. */
function serverLocation(urlText: string): string {
  let url: URL;
  try {
    url = new URL(urlText);
  } catch {
    throw new DatabaseConfigError("DATABASE_URL is not a valid URL (expected postgres://user:password@host:port/database)");
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:")
    throw new DatabaseConfigError(`DATABASE_URL must start with postgres:// or postgresql://, not ${url.protocol}//`);
  return `${url.hostname}${url.port ? `:${url.port}` : ""}${url.pathname}`;
}

function openPools(connection: pg.PoolConfig, where: string, schema: string, options: DatabaseOptions): Database {
  const timeoutMs = options.operatorQueryTimeoutMs ?? DEFAULTS.operatorQueryTimeoutMs;
  const openPool = (max: number, startup: string) => {
    // A startup parameter, so the setting holds from the first query of every new connection.
    const pool = new pg.Pool({ ...connection, max, options: `-c search_path=${schema}${startup}` });
    // An idle client's connection dropped (server restart): pg emits this and drops the client; without a listener it crashes the process.
    pool.on("error", (error) =>
      options.logger?.warn(
        { err: { message: error.message, code: (error as { code?: string }).code }, database: where },
        "idle database connection failed",
      ),
    );
    // The same for a client checked out but between queries when the server goes away (it stops,
    // restarts): the pool listens on idle clients only, and the error would crash the worker. The
    // client is no longer queryable, so the pool discards it on release.
    pool.on("connect", (client) =>
      client.on("error", (error) =>
        options.logger?.warn({ err: { message: error.message }, database: where }, "database connection failed while checked out"),
      ),
    );
    return { pool, db: new Kysely<DatabaseSchema>({ dialect: new PostgresDialect({ pool }) }) };
  };
  // Which setup this is: the embedded server's pools are opened without a URL.
  const driver = options.url ? "server" : "embedded";
  const { pool, db } = openPool(options.poolSize ?? 10, "");
  // A pool connects on its first query: the database is opened when a connection is, not before.
  pool.once("connect", () => options.logger?.info({ database: where, schema, driver }, "database opened"));
  const operatorDb = openPool(OPERATOR_POOL_SIZE, ` -c statement_timeout=${timeoutMs}`).db;
  return {
    db,
    operatorDb,
    operatorQueryTimeoutMs: timeoutMs,
    driver,
    schema,
    location: where,
    close: () => Promise.all([db.destroy(), operatorDb.destroy()]).then(() => undefined),
  };
}

/**
 * The database handle with an introspector that sees only `schema`. Kysely's Migrator asks the
 * introspector whether its bookkeeping tables exist, and Kysely's PostgreSQL introspector reads
 * every table of every schema, resolving each by name (`pg_get_serial_sequence`): with other
 * deployments (or test runs) in the same database, a table dropped between its catalog read and
 * that lookup fails the migration ("relation … does not exist"), and the scan grows with every
 * schema. Migrations need to know only about their own schema's tables.
 */
export function scopedToSchema<DB>(db: Kysely<DB>, schema: string): Kysely<DB> {
  const introspection = schemaIntrospector(db, schema);
  return new Proxy(db, {
    get(target, property) {
      if (property === "introspection") return introspection;
      const value: unknown = Reflect.get(target, property, target);
      // Kysely's methods read private fields: they must run on the real instance, not the proxy.
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

function schemaIntrospector<DB>(db: Kysely<DB>, schema: string): DatabaseIntrospector {
  const getTables = async (): Promise<TableMetadata[]> => {
    const { rows } = await sql<{ name: string; type: string }>`
      select table_name as name, table_type as type from information_schema.tables where table_schema = ${schema}
    `.execute(db);
    return rows.map((row) => ({ name: row.name, schema, isView: row.type === "VIEW", columns: [] }));
  };
  return {
    // The Migrator creates its schema when this does not list it.
    getSchemas: async (): Promise<SchemaMetadata[]> =>
      (await sql<SchemaMetadata>`select nspname as name from pg_catalog.pg_namespace where nspname = ${schema}`.execute(db)).rows,
    getTables,
    // Still part of Kysely's interface (deprecated there): the same tables.
    // eslint-disable-next-line @typescript-eslint/no-deprecated
    getMetadata: async (): Promise<DatabaseMetadata> => ({ tables: await getTables() }),
  };
}

/** Errors of reaching the server at all (refused, reset, timed out, no such host): the database is away, no migration is wrong. */
const CONNECTION_ERROR = /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOTFOUND|EHOSTUNREACH|EAI_AGAIN)$/;

/**
 * A migration that failed; the database is left at the last migration that succeeded. A server
 * that does not answer is said so, naming DATABASE_URL as Redis's outage names REDIS_URL
 * (redis.ts logRedisOutages), rather than as a failed "(setup)" migration.
 */
export class MigrationError extends NamedError {
  readonly code = "migration_failed";
  constructor(
    readonly migration: string | undefined,
    options: { cause: unknown; database?: Pick<Database, "driver" | "location"> },
  ) {
    const { cause, database } = options;
    const code = (cause as { code?: unknown } | undefined)?.code;
    super(
      database?.driver === "server" && typeof code === "string" && CONNECTION_ERROR.test(code)
        ? `PostgreSQL at ${database.location} does not answer (${code}): is it running, and is DATABASE_URL set to it?`
        : `database migration ${migration ?? "(setup)"} failed: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
  }
}

/**
 * Applies every pending migration, each in its own transaction, under Kysely's Postgres migration
 * lock (a session-level `pg_advisory_lock` on one connection): processes that start together
 * queue behind one another and each finds the others' work done. The lock key is fixed, so
 * migrations of different schemas in one database also take turns (harmless, they are short).
 * Returns the names of the migrations this call applied.
 */
export async function migrateToLatest(
  database: Pick<Database, "db" | "schema" | "driver" | "location">,
  /** count: apply only the first `count` migrations (tests: start from an older version). Default: all. */
  options: { count?: number } = {},
): Promise<string[]> {
  const migrator = new Migrator({
    // Its check for its own tables looks in this schema only (scopedToSchema).
    db: scopedToSchema(database.db, database.schema),
    provider: staticMigrationProvider(options.count),
    // Kysely's own bookkeeping tables live beside ours, in the configured schema.
    migrationTableSchema: database.schema,
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error)
    throw new MigrationError(results?.find((r: MigrationResult) => r.status === "Error")?.migrationName, { cause: error, database });
  return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
}
