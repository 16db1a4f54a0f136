import { Migrator, type MigrationResult } from "kysely";
import type { Database } from "./database.js";
import { staticMigrationProvider } from "./migrations.js";
import { scopedToSchema } from "./schema-introspection.js";

export interface MigrateOptions {
  /** Apply only the first `count` migrations (tests: start from an older version). Default: all. */
  count?: number;
}

/** A migration that failed; the database is left at the last migration that succeeded. */
export class MigrationError extends Error {
  readonly code = "migration_failed";
  constructor(
    readonly migration: string | undefined,
    options: { cause: unknown },
  ) {
    super(
      `database migration ${migration ?? "(setup)"} failed: ${options.cause instanceof Error ? options.cause.message : String(options.cause)}`,
      options,
    );
    this.name = "MigrationError";
  }
}

/**
 * Applies every pending migration, each in its own transaction, under Kysely's Postgres migration
 * lock (a session-level `pg_advisory_lock` on one connection): processes that start together
 * queue behind one another and each finds the others' work done. The lock key is fixed, so
 * migrations of different schemas in one database also take turns (harmless, they are short).
 * Returns the names of the migrations this call applied.
 */
export async function migrateToLatest(database: Pick<Database, "db" | "schema">, options: MigrateOptions = {}): Promise<string[]> {
  const migrator = new Migrator({
    // Its check for its own tables looks in this schema only (schema-introspection.ts).
    db: scopedToSchema(database.db, database.schema),
    provider: staticMigrationProvider(options.count),
    // Kysely's own bookkeeping tables live beside ours, in the configured schema.
    migrationTableSchema: database.schema,
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw new MigrationError(results?.find((r: MigrationResult) => r.status === "Error")?.migrationName, { cause: error });
  return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
}
