import { sql, type DatabaseIntrospector, type DatabaseMetadata, type Kysely, type SchemaMetadata, type TableMetadata } from "kysely";

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
    getSchemas: async (): Promise<SchemaMetadata[]> => {
      const { rows } = await sql<{ name: string }>`select nspname as name from pg_catalog.pg_namespace where nspname = ${schema}`.execute(
        db,
      );
      return rows;
    },
    getTables,
    // Still part of Kysely's interface (deprecated there): the same tables.
    // eslint-disable-next-line @typescript-eslint/no-deprecated
    getMetadata: async (): Promise<DatabaseMetadata> => ({ tables: await getTables() }),
  };
}
