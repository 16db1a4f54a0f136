/** Gives a test file its own database: each driver, each file its own schema, migrated. */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inject } from "vitest";
import { sql } from "kysely";
import { createDatabase, type Database, migrateToLatest } from "../../src/mirror/database.js";
import { EMBEDDED_PASSWORD_FILE, seedEmbeddedCluster, startEmbeddedServer } from "../../src/mirror/embedded-server.js";
import { embeddedPackage } from "../../src/mirror/embedded-binaries.js";
export type TestDriver = Database["driver"];

/**
 * The drivers the database suites run on: the run's server (global setup always has one, from
 * the machine's binaries or the embedded store's). The embedded store is the same PostgreSQL over
 * the same driver, so its own suites (database.test.ts, the CLI's on DATA_DIR) test only what
 * differs: starting, locking and stopping its server.
 */
export function testDrivers(): TestDriver[] {
  return ["server"];
}

/** The driver for tests that just need a database: the run's server, one schema per file. */
export function preferredDriver(): TestDriver {
  return "server";
}

/** Environment for a service started as its own process (CLI tests, chaos): a schema of its own on the run's server. */
export function databaseEnv(): Record<string, string> {
  return { DATABASE_URL: inject("databaseUrl"), DATABASE_SCHEMA: randomSchema() };
}

/**
 * Gives an empty DATA_DIR the embedded store's freshly initdb'd cluster and its password (copies
 * of the run's template, global setup's `embeddedTemplate`), as the process would create them at
 * its first start: each CLI process of the suite then skips initdb, not the migrations.
 */
export function seeded(dir: string): string {
  if (readdirSync(dir).length === 0) seedEmbeddedCluster(dir, inject("embeddedTemplate"));
  return dir;
}

/**
 * The template `seeded` copies: a data directory whose cluster was initdb'd and secured (and once
 * started, so it is complete) by the embedded server itself, made once per checkout and binaries
 * version under a temp name renamed when complete, so runs starting together never copy half of
 * one. Made beside where it is kept (one filesystem for the rename), and reachable by the server
 * however private the checkout's folders are.
 */
export async function embeddedClusterTemplate(): Promise<string> {
  const dir = join(CACHE_DIR, `embedded-${embeddedPackage().version}`);
  if (existsSync(join(dir, EMBEDDED_PASSWORD_FILE))) return dir;
  mkdirSync(CACHE_DIR, { recursive: true });
  const dataDir = mkdtempSync(join(CACHE_DIR, "template-"));
  try {
    await (await startEmbeddedServer(dataDir)).stop();
    renameSync(dataDir, dir);
  } catch (error) {
    if (!existsSync(join(dir, EMBEDDED_PASSWORD_FILE))) throw error; // else another run made it first
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
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

export interface TestDatabase extends Database {
  /** Empties every table (between tests of one file). */
  truncate(): Promise<void>;
}

export interface OpenOptions {
  /** Migrate to latest (default), to the first `count` migrations, or not at all (0). */
  migrations?: number;
  schema?: string;
  /** Embedded only: the data directory (default: a fresh temp one, removed on close). */
  dataDir?: string;
}

/**
 * Opens a database for one test file. The server variant uses its own random schema on the
 * run's server and drops it on close; the embedded one starts its own server on `dataDir`.
 */
export async function openTestDatabase(driver: TestDriver, options: OpenOptions = {}): Promise<TestDatabase> {
  const schema = options.schema ?? randomSchema();
  const ownDir = driver === "embedded" && options.dataDir === undefined ? mkdtempSync(join(tmpdir(), "svc-embedded-")) : undefined;
  const database = await createDatabase(
    driver === "server"
      ? { url: inject("databaseUrl"), dataDir: "", schema, poolSize: 4 }
      : { dataDir: options.dataDir ?? ownDir!, schema, embeddedTemplate: inject("embeddedTemplate") },
  );
  if (options.migrations !== 0) await migrateToLatest(database, options.migrations === undefined ? {} : { count: options.migrations });
  return {
    ...database,
    async truncate() {
      await sql`truncate orders, order_items, bookings, menu_items, reviews, events, handler_attempts, change_outbox, record_changes, rejected_records, sync_checkpoints`.execute(
        database.db,
      );
    },
    // The schema stays until the run ends: a drop while another file's service starts can fail that
    // start, as the migrator's catalog scan (Kysely's getTables) names every schema it sees and errs
    // on one dropped under it.
    close: () => database.close().finally(() => ownDir && rmSync(ownDir, { recursive: true, force: true })),
  };
}
