import { randomBytes } from "node:crypto";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { embeddedClusterTemplate } from "./helpers/postgres.js";
import { findPostgresBin, startPostgresServer, type PostgresServer } from "./helpers/postgres-server.js";
import { startRedisServer, type RedisServer } from "./helpers/redis-server.js";

declare module "vitest" {
  export interface ProvidedContext {
    redisUrl: string;
    /** The run's PostgreSQL server. */
    databaseUrl: string;
    /** Starts the name of every schema a test makes on that server, so the run drops its own at the end. */
    schemaPrefix: string;
    /** An initdb'd embedded cluster that the embedded store's tests copy instead of running initdb. */
    embeddedTemplate: string;
  }
}

/**
 * Every test file talks to a real Redis: TEST_REDIS_URL when set, else a throwaway
 * redis-server started here on a free port and stopped after the run. Never REDIS_URL: `npm run
 * dev`'s export block sets it in the developer's shell, and the suite would leave thousands of
 * `test-*` keys in the dev stack's Redis.
 * Likewise PostgreSQL: TEST_DATABASE_URL when set, else a throwaway server from the installed
 * binaries, else from the embedded store's own (the npm package): a machine with Node and
 * redis-server runs every suite.
 */
export default async function setup(project: Pick<TestProject, "provide">) {
  let server: RedisServer | undefined;
  let postgres: PostgresServer | undefined;
  let url = process.env.TEST_REDIS_URL;
  if (!url) {
    server = await startRedisServer();
    url = server.url;
  }
  project.provide("redisUrl", url);

  let databaseUrl = process.env.TEST_DATABASE_URL ?? "";
  try {
    // The template first: it may fail (no binaries for this platform) before anything else starts.
    project.provide("embeddedTemplate", await embeddedClusterTemplate());
    if (!databaseUrl) {
      postgres = await startPostgresServer(await findPostgresBin());
      databaseUrl = postgres.url;
    }
  } catch (error) {
    // Vitest runs no teardown for a setup that threw: what started here stops here.
    await server?.destroy();
    throw error;
  }
  project.provide("databaseUrl", databaseUrl);
  const schemaPrefix = `t_${randomBytes(4).toString("hex")}_`;
  project.provide("schemaPrefix", schemaPrefix);
  return async () => {
    await server?.destroy();
    // A throwaway server goes whole; on TEST_DATABASE_URL's, this run's schemas are dropped.
    if (postgres) await postgres.destroy();
    else if (databaseUrl) await dropSchemas(databaseUrl, schemaPrefix);
  };
}

async function dropSchemas(url: string, prefix: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>("select nspname as name from pg_namespace where starts_with(nspname, $1)", [
      prefix,
    ]);
    for (const { name } of rows) await client.query(`drop schema if exists "${name}" cascade`);
  } finally {
    await client.end();
  }
}
