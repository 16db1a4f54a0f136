import type { TestProject } from "vitest/node";
import { findPostgresBin, POSTGRES_INSTALL_HINT, startPostgresServer, type PostgresServer } from "./helpers/postgres-server.js";
import { startRedisServer, type RedisServer } from "./helpers/redis-server.js";

declare module "vitest" {
  export interface ProvidedContext {
    redisUrl: string;
    /** A PostgreSQL server for the run; "" when none is available (embedded-only run). */
    databaseUrl: string;
  }
}

/**
 * Every test file talks to a real Redis: REDIS_URL when set, else a throwaway
 * redis-server started here on a free port and stopped after the run.
 * Likewise PostgreSQL: TEST_DATABASE_URL when set, else a throwaway server from the installed
 * binaries, else none (the database suites then run against the embedded store only).
 */
export default async function setup(project: TestProject) {
  let server: RedisServer | undefined;
  let postgres: PostgresServer | undefined;
  let url = process.env.REDIS_URL;
  if (!url) {
    server = await startRedisServer();
    url = server.url;
  }
  project.provide("redisUrl", url);

  let databaseUrl = process.env.TEST_DATABASE_URL ?? "";
  if (!databaseUrl) {
    const bin = findPostgresBin();
    if (bin) {
      postgres = await startPostgresServer(bin).catch(async (error: unknown) => {
        await server?.destroy();
        throw error;
      });
      databaseUrl = postgres.url;
    } else {
      console.warn(POSTGRES_INSTALL_HINT);
    }
  }
  project.provide("databaseUrl", databaseUrl);
  return async () => {
    await server?.destroy();
    await postgres?.destroy();
  };
}
