/** Gives a test file its own database: each driver, each file its own schema, migrated. */
import { randomBytes } from "node:crypto";
import { inject } from "vitest";
import { sql } from "kysely";
import { createDatabase, type Database } from "../../src/mirror/database.js";
import { migrateToLatest } from "../../src/mirror/migrate.js";

export type TestDriver = Database["driver"];

/** The drivers this run can test: the embedded store always, a server when global setup has one. */
export function testDrivers(): TestDriver[] {
  return inject("databaseUrl") ? ["embedded", "server"] : ["embedded"];
}

/** A fresh schema name per file (and per call), so files run in parallel on one server. */
export const randomSchema = () => `t_${randomBytes(6).toString("hex")}`;

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
  const database = await createDatabase(driver === "server" ? { url: inject("databaseUrl"), dataDir: "", schema, poolSize: 4 } : { dataDir: options.dataDir ?? "memory://", schema });
  if (options.migrations !== 0) await migrateToLatest(database, options.migrations === undefined ? {} : { count: options.migrations });
  return {
    ...database,
    async truncate() {
      await sql`truncate orders, order_items, bookings, menu_items, reviews, events`.execute(database.db);
    },
    async close() {
      if (driver === "server") await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(database.db);
      await database.close();
    },
  };
}
