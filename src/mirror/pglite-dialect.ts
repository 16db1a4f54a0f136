import type { PGlite } from "@electric-sql/pglite";
import {
  CompiledQuery,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
  type TransactionSettings,
} from "kysely";

/**
 * A Kysely dialect for an in-process PGlite: Kysely's own Postgres adapter, compiler and
 * introspector over a driver of ~50 lines. Written here rather than installed because the
 * maintained package (kysely-pglite-dialect 1.3) declares PGlite ≤ 0.4 as its peer and we pin
 * 0.5, and kysely-pglite bundles a codegen CLI (oclif, chokidar, …) we do not need.
 *
 * PGlite is one connection. Kysely's transactions (and the migrator's advisory lock) hold a
 * connection across several awaits, so the driver hands the one connection out to one holder at
 * a time; everything else queues. Inside a transaction, query through its `tx`, never the outer
 * `db`, or the transaction waits for itself.
 */
export function createPGliteDialect(pglite: PGlite): Dialect {
  return {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => createPGliteDriver(pglite),
    createQueryCompiler: () => new PostgresQueryCompiler(),
    createIntrospector: (db: Kysely<unknown>) => new PostgresIntrospector(db),
  };
}

function createPGliteDriver(pglite: PGlite): Driver {
  const connection: DatabaseConnection = {
    async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
      const result = await pglite.query<R>(query.sql, [...query.parameters], { rowMode: "object" });
      return result.affectedRows === undefined
        ? { rows: result.rows }
        : { rows: result.rows, numAffectedRows: BigInt(result.affectedRows) };
    },
    streamQuery() {
      throw new Error("streaming queries are not supported by the embedded database");
    },
  };
  // The tail of the queue of holders: each acquirer waits for the previous holder's release.
  let tail: Promise<void> = Promise.resolve();
  let release: (() => void) | undefined;

  return {
    // The PGlite instance is handed over open: nothing to set up.
    init: () => Promise.resolve(),
    async acquireConnection() {
      const previous = tail;
      let done!: () => void;
      tail = new Promise<void>((resolve) => (done = resolve));
      await previous;
      release = done;
      return connection;
    },
    releaseConnection() {
      const done = release;
      release = undefined;
      done?.();
      return Promise.resolve();
    },
    async beginTransaction(conn: DatabaseConnection, settings: TransactionSettings) {
      const mode = [settings.isolationLevel && `isolation level ${settings.isolationLevel}`, settings.accessMode].filter(Boolean).join(" ");
      await conn.executeQuery(CompiledQuery.raw(mode ? `start transaction ${mode}` : "begin"));
    },
    async commitTransaction(conn: DatabaseConnection) {
      await conn.executeQuery(CompiledQuery.raw("commit"));
    },
    async rollbackTransaction(conn: DatabaseConnection) {
      await conn.executeQuery(CompiledQuery.raw("rollback"));
    },
    async destroy() {
      if (!pglite.closed) await pglite.close();
    },
  };
}
