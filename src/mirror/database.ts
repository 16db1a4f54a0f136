import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { Kysely, PostgresDialect } from "kysely";
import pg from "pg";
import { DEFAULTS } from "../config/defaults.js";
import type { Logger } from "../logging/logger.js";
import { lockDataDir, type DataDirLock } from "./data-dir-lock.js";
import type { DatabaseSchema } from "./database-schema.js";
import { createPGliteDialect } from "./pglite-dialect.js";

export interface DatabaseOptions {
  /** postgres://… of a PostgreSQL server. Without it: the embedded PGlite under `dataDir`. */
  url?: string;
  /** Where the embedded database keeps its files; `memory://` keeps them in memory (tests). */
  dataDir: string;
  /** The schema every table lives in (DATABASE_SCHEMA, default `svc`). */
  schema?: string;
  logger?: Logger;
  /** Connections in the server pool. Default 10. */
  poolSize?: number;
  /**
   * Operator reads (`operatorDb`) end after this long: on a server each statement is cancelled
   * (statement_timeout); the embedded store, which cannot cancel, stops its scan between
   * windows. Default 5000.
   */
  operatorQueryTimeoutMs?: number;
  /** Embedded only: a PGlite data-directory dump to start from instead of running initdb (tests: ~1 s instead of ~3–10). */
  embeddedTemplate?: Blob;
}

export interface Database {
  db: Kysely<DatabaseSchema>;
  /**
   * For operator reads (GET /events, /mirror): on a server a pool of its own (OPERATOR_POOL_SIZE
   * connections, statement_timeout set), so a slow read neither holds the worker's connections
   * nor runs unbounded; embedded, the one connection (`db` itself).
   */
  operatorDb: Kysely<DatabaseSchema>;
  operatorQueryTimeoutMs: number;
  driver: "server" | "embedded";
  schema: string;
  close(): Promise<void>;
}

/** A bad DATABASE_URL / DATABASE_SCHEMA: raised before any connection, never echoing the URL. */
export class DatabaseConfigError extends Error {
  readonly code = "database_config";
  constructor(message: string) {
    super(message);
    this.name = "DatabaseConfigError";
  }
}

export const DEFAULT_SCHEMA = "svc";
/** Connections of the operator-read pool on a server: reads queue there, never in the worker's pool. */
export const OPERATOR_POOL_SIZE = 2;
// Lower-case so it needs no quoting anywhere (psql, search_path, other tools); no pg_ prefix (reserved).
const SCHEMA_NAME = /^(?!pg_)[a-z_][a-z0-9_]{0,62}$/;

/** Where the embedded database keeps its files inside DATA_DIR (the lock file sits beside it). */
export const embeddedDirectory = (dataDir: string) => join(dataDir, "postgres");

/** The server's host and database, for log lines: never the user or password. */
function describeServer(url: URL): string {
  return `${url.hostname}${url.port ? `:${url.port}` : ""}${url.pathname}`;
}

/**
 * Opens the service's database: a pooled node-postgres connection to a server when `url` is
 * given, else an embedded PGlite in this process. Either way every connection's search_path is
 * the configured schema, so queries and migrations name tables unqualified. Call
 * `migrateToLatest` before use.
 */
export async function createDatabase(options: DatabaseOptions): Promise<Database> {
  const schema = options.schema ?? DEFAULT_SCHEMA;
  if (!SCHEMA_NAME.test(schema)) {
    throw new DatabaseConfigError(
      `DATABASE_SCHEMA must be a lower-case identifier (letters, digits, _; at most 63; not pg_…), got ${JSON.stringify(schema.slice(0, 80))}`,
    );
  }
  return options.url === undefined || options.url === ""
    ? openEmbedded(options.dataDir, schema, options)
    : openServer(options.url, schema, options);
}

function openServer(urlText: string, schema: string, options: DatabaseOptions): Database {
  let url: URL;
  try {
    url = new URL(urlText);
  } catch {
    throw new DatabaseConfigError("DATABASE_URL is not a valid URL (expected postgres://user:password@host:port/database)");
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") {
    throw new DatabaseConfigError(`DATABASE_URL must start with postgres:// or postgresql://, not ${url.protocol}//`);
  }
  const where = describeServer(url);
  const timeoutMs = options.operatorQueryTimeoutMs ?? DEFAULTS.operatorQueryTimeoutMs;
  const openPool = (max: number, startup: string) => {
    // A startup parameter, so the setting holds from the first query of every new connection.
    const pool = new pg.Pool({ connectionString: urlText, max, options: `-c search_path=${schema}${startup}` });
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
    return new Kysely<DatabaseSchema>({ dialect: new PostgresDialect({ pool }) });
  };
  const db = openPool(options.poolSize ?? 10, "");
  const operatorDb = openPool(OPERATOR_POOL_SIZE, ` -c statement_timeout=${timeoutMs}`);
  options.logger?.info({ database: where, schema, driver: "server" }, "database opened");
  return {
    db,
    operatorDb,
    operatorQueryTimeoutMs: timeoutMs,
    driver: "server",
    schema,
    close: () => Promise.all([db.destroy(), operatorDb.destroy()]).then(() => undefined),
  };
}

async function openEmbedded(
  dataDir: string,
  schema: string,
  { logger, embeddedTemplate, operatorQueryTimeoutMs }: DatabaseOptions,
): Promise<Database> {
  const inMemory = dataDir.startsWith("memory://");
  const lock: DataDirLock | undefined = inMemory ? undefined : await lockDataDir(dataDir);
  let pglite: PGlite;
  try {
    pglite = await PGlite.create(
      inMemory ? dataDir : embeddedDirectory(dataDir),
      embeddedTemplate ? { loadDataDir: embeddedTemplate } : {},
    );
    // One session for the life of the instance, so a session setting holds for every query.
    await pglite.exec(`SET search_path TO ${schema}`);
  } catch (error) {
    lock?.release();
    throw error;
  }
  const db = new Kysely<DatabaseSchema>({ dialect: createPGliteDialect(pglite) });
  logger?.info({ dataDir: inMemory ? "memory" : dataDir, schema, driver: "embedded" }, "database opened");
  return {
    db,
    // One connection: operator reads share it, bounded by the event log's windowed scan instead.
    operatorDb: db,
    operatorQueryTimeoutMs: operatorQueryTimeoutMs ?? DEFAULTS.operatorQueryTimeoutMs,
    driver: "embedded",
    schema,
    async close() {
      try {
        await db.destroy();
      } finally {
        lock?.release();
      }
    },
  };
}
