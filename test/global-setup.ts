import type { TestProject } from "vitest/node";
import { startRedisServer, type RedisServer } from "./helpers/redis-server.js";

declare module "vitest" {
  export interface ProvidedContext {
    redisUrl: string;
  }
}

/**
 * Every test file talks to a real Redis: REDIS_URL when set, else a throwaway
 * redis-server started here on a free port and stopped after the run.
 */
export default async function setup(project: TestProject) {
  let server: RedisServer | undefined;
  let url = process.env.REDIS_URL;
  if (!url) {
    server = await startRedisServer();
    url = server.url;
  }
  project.provide("redisUrl", url);
  return async () => {
    await server?.destroy();
  };
}
