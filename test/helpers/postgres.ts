/** Gives a test file its own database: each driver, each file its own schema, migrated. */
import { randomBytes } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { inject } from "vitest";
import { sql } from "kysely";
import { createDatabase, type Database, embeddedDirectory, migrateToLatest } from "../../src/mirror/database.js";
export type TestDriver = Database["driver"];

/** The drivers this run can test: the embedded store always, a server when global setup has one. */
export function testDrivers(): TestDriver[] {
  return inject("databaseUrl") ? ["embedded", "server"] : ["embedded"];
}

/** The faster driver for tests that just need a database: the run's server when there is one. */
export function preferredDriver(): TestDriver {
  return inject("databaseUrl") ? "server" : "embedded";
}

/**
 * Environment for a service started as its own process (CLI tests, chaos): a schema of its own
 * on the run's server, else an embedded database in a fresh directory (one process only).
 */
export function databaseEnv(dataDir: () => string): Record<string, string> {
  const url = inject("databaseUrl");
  return url ? { DATABASE_URL: url, DATABASE_SCHEMA: randomSchema() } : { DATA_DIR: seeded(dataDir()) };
}

/**
 * Gives an empty DATA_DIR the embedded store's freshly initdb'd files (copied from the run's
 * template, global setup's `pgliteDataDir`), as the process would create them at its first start:
 * each CLI process of the suite then skips initdb (about 5 s of CPU), not the migrations. Without a
 * template (another config's run) the directory is left empty, and the process creates the store.
 */
export function seeded(dir: string): string {
  const template = inject("pgliteDataDir");
  if (template && readdirSync(dir).length === 0) cpSync(template, embeddedDirectory(dir), { recursive: true });
  return dir;
}

/**
 * The template `seeded` copies: a PGlite data directory on disk loaded from `pgliteTemplate`, made
 * once per machine and PGlite version (global setup), under a temp name renamed when complete.
 */
export async function pgliteDataDirTemplate(): Promise<string> {
  const dir = join(CACHE_DIR, `pglite-${pgliteVersion()}-datadir`);
  if (existsSync(dir)) return dir;
  const blob = await pgliteTemplate();
  const temp = `${dir}.${process.pid}.${randomBytes(4).toString("hex")}`;
  const pglite = await PGlite.create(temp, { loadDataDir: blob });
  await pglite.close();
  try {
    renameSync(temp, dir);
  } catch {
    rmSync(temp, { recursive: true, force: true }); // another run made it first
  }
  return dir;
}

/** Opens the database a CLI process was pointed at by `databaseEnv` (migrated by that process). */
export function openDatabaseOfEnv(env: Record<string, string>): Promise<Database> {
  return env.DATABASE_URL
    ? createDatabase({ url: env.DATABASE_URL, dataDir: "", schema: env.DATABASE_SCHEMA ?? "svc" })
    : createDatabase({ dataDir: env.DATA_DIR! });
}

/**
 * A fresh schema name per file (and per call), so files run in parallel on one server. It starts
 * with the run's prefix: global setup drops the run's schemas at the end (see TestDatabase.close).
 */
export const randomSchema = () => `${inject("schemaPrefix")}${randomBytes(6).toString("hex")}`;

const CACHE_DIR = join(process.cwd(), "node_modules", ".cache", "svc-webhooks");

const pgliteVersion = () => {
  const manifest = join(process.cwd(), "node_modules", "@electric-sql", "pglite", "package.json");
  return (JSON.parse(readFileSync(manifest, "utf8")) as { version: string }).version;
};

/**
 * A freshly initdb'd PGlite data directory, dumped once per machine and PGlite version: loading
 * it takes about a second, where each new in-memory PGlite would run initdb again (3–10 s on
 * this machine). Written to a temp name and renamed, so files starting together never read half a dump.
 */
export async function pgliteTemplate(): Promise<Blob> {
  const file = join(CACHE_DIR, `pglite-${pgliteVersion()}.tar`);
  try {
    return new Blob([readFileSync(file)]);
  } catch {
    const pglite = await PGlite.create("memory://");
    const dump = await pglite.dumpDataDir("none");
    await pglite.close();
    mkdirSync(CACHE_DIR, { recursive: true });
    const temp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}`;
    writeFileSync(temp, Buffer.from(await dump.arrayBuffer()));
    renameSync(temp, file);
    return dump;
  }
}

export interface TestDatabase extends Database {
  /** Empties every table (between tests of one file). */
  truncate(): Promise<void>;
}

export interface OpenOptions {
  /** Migrate to latest (default), to the first `count` migrations, or not at all (0). */
  migrations?: number;
  schema?: string;
  /** Embedded only: a data directory on disk instead of memory. */
  dataDir?: string;
}

/**
 * Opens a database for one test file. The server variant uses its own random schema on the
 * run's server and drops it on close; the embedded one is in memory unless `dataDir` is given.
 */
export async function openTestDatabase(driver: TestDriver, options: OpenOptions = {}): Promise<TestDatabase> {
  const schema = options.schema ?? randomSchema();
  const database = await createDatabase(
    driver === "server"
      ? { url: inject("databaseUrl"), dataDir: "", schema, poolSize: 4 }
      : { dataDir: options.dataDir ?? "memory://", schema, embeddedTemplate: await pgliteTemplate() },
  );
  if (options.migrations !== 0) await migrateToLatest(database, options.migrations === undefined ? {} : { count: options.migrations });
  return {
    ...database,
    async truncate() {
      await sql`truncate orders, order_items, bookings, menu_items, reviews, events, handler_attempts, change_outbox, rejected_records, sync_checkpoints`.execute(
        database.db,
      );
    },
    // The schema stays until the run ends: a drop while another file's service starts can fail that
    // start, as the migrator's catalog scan (Kysely's getTables) names every schema it sees and errs
    // on one dropped under it.
    close: () => database.close(),
  };
}
