import { randomUUID } from "node:crypto";
import { inject } from "vitest";
import { signPayload } from "../../src/events/envelope.js";
import { loadConfig } from "../../src/config/config.js";
import { createLogger } from "../../src/logging/logger.js";
import { createService, type Service } from "../../src/service.js";
import type { AnnounceTransition } from "../../src/problems/problem.js";
import { createRedisConnection, type RedisClient } from "../../src/redis/redis.js";
import type { EventHandlers } from "../../src/worker/handlers.js";
import { captureLogs } from "./log-capture.js";
import { openTestDatabase, preferredDriver, type TestDatabase, type TestDriver } from "./postgres.js";
import { TEST_SECRET } from "./edge.js";

export const ADMIN_TOKEN = "admin-token-for-tests-0123456789";

export interface TestService {
  url: string;
  service: Service;
  /** The queue prefix in use (wrapped in braces on a cluster). */
  prefix: string;
  logs: ReturnType<typeof captureLogs>;
  /** The service's own database (a schema of its own on the run's server, else embedded in memory). */
  database: TestDatabase;
  /** A separate connection to the same Redis (or cluster). */
  redis: RedisClient;
  /** POSTs a body signed with TEST_SECRET to /webhooks. */
  deliver(body: string | object): Promise<Response>;
  /** POSTs a body signed with `secret` to a registered account's /webhooks/{account}. */
  deliverTo(account: string, body: string | object, secret: string): Promise<Response>;
  /** Calls the operator API with ADMIN_TOKEN (GET unless told otherwise; a body is sent as JSON). */
  admin(path: string, method?: string, body?: unknown): Promise<Response>;
  stop(): Promise<void>;
}

/** A whole service (edge and worker unless ROLE says otherwise), isolated by its own prefix. */
export async function startService(
  env: Record<string, string> = {},
  handlers: EventHandlers[] = [],
  options: {
    driver?: TestDriver;
    /** Shared with other services (and left open by stop()); by default a fresh one. */ database?: TestDatabase;
    /** Embedded on disk here (the test process holds its lock), not in memory. */ dataDir?: string;
    /** Receives each problem's opening and resolution (ServiceOptions.announce). */ announce?: AnnounceTransition;
  } = {},
): Promise<TestService> {
  const prefix = `test-${randomUUID().slice(0, 8)}`;
  const config = loadConfig({
    HOST: "127.0.0.1",
    PORT: "0",
    REDIS_URL: inject("redisUrl"),
    QUEUE_PREFIX: prefix,
    SIGNING_SECRET: TEST_SECRET,
    ADMIN_TOKEN,
    LOG_LEVEL: "debug",
    RECONCILE_INTERVAL_SECONDS: "0",
    SYNC_DEBOUNCE_MS: "100",
    ...env,
  });
  const logs = captureLogs();
  const logger = createLogger({
    level: config.logLevel,
    destination: logs.stream,
    secrets: [...config.signingSecrets, ADMIN_TOKEN, ...(config.api ? [config.api.apiKey] : [])],
  });
  const database: TestDatabase =
    options.database ??
    (options.dataDir
      ? await openTestDatabase("embedded", { migrations: 0, dataDir: options.dataDir })
      : await openTestDatabase(options.driver ?? preferredDriver(), { migrations: 0 }));
  const service = await createService({ config, logger, handlers, database, ...(options.announce ? { announce: options.announce } : {}) });
  const url = await service.start();
  const redis = createRedisConnection(config.redisUrl, "worker", { cluster: config.redisCluster });
  return {
    url,
    service,
    database,
    prefix: config.queuePrefix,
    logs,
    redis,
    deliver(body) {
      return deliverSigned(`${url}/webhooks`, body, TEST_SECRET);
    },
    deliverTo(account, body, secret) {
      return deliverSigned(`${url}/webhooks/${account}`, body, secret);
    },
    admin: (path, method = "GET", body?: unknown) =>
      fetch(`${url}${path}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
    async stop() {
      await service.stop();
      await redis.quit();
      if (!options.database) await database.close();
    },
  };
}

/** POSTs `body` (JSON unless a string) to `url`, signed with `secret` as the upstream signs. */
function deliverSigned(url: string, body: string | object, secret: string): Promise<Response> {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  return fetch(url, {
    method: "POST",
    body: text,
    headers: { "content-type": "application/json", "x-svc-signature": signPayload(text, secret) },
  });
}
