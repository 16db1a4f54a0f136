import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { inject } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { createLogger } from "../../src/logging/logger.js";
import { createService, type Service } from "../../src/service.js";
import { EVENTS_QUEUE, type EventJobData } from "../../src/queue/events-queue.js";
import { signPayload } from "../../src/events/envelope.js";
import { captureLogs } from "./log-capture.js";
import { openTestDatabase, preferredDriver } from "./postgres.js";
import { streamEvents } from "./ingest-stream.js";
import { redisKeys } from "../../src/redis/redis.js";

export const TEST_SECRET = "whsec_test_primary_5b0d1c7e";
export const TEST_SECRET_2 = "whsec_test_rotated_9f3a2b61";

export interface TestEdge {
  url: string;
  service: Service;
  prefix: string;
  logs: ReturnType<typeof captureLogs>;
  /** A separate Queue handle to inspect what the edge enqueued. */
  queue: Queue;
  /** A plain Redis connection to the same server. */
  redis: Redis;
  /** Every event the edge stored: in the ingest stream (no worker runs beside a web edge) or in the events queue. */
  stored(): Promise<EventJobData[]>;
  post(body: string | Uint8Array, headers?: Record<string, string>): Promise<Response>;
  postSigned(body: string | object, secret?: string): Promise<Response>;
  stop(): Promise<void>;
}

/** Starts an isolated edge (own queue prefix, own logger) on a free loopback port. */
export async function startEdge(env: Record<string, string> = {}): Promise<TestEdge> {
  const prefix = `test-${randomUUID().slice(0, 8)}`;
  const config = loadConfig({
    ROLE: "web",
    HOST: "127.0.0.1",
    PORT: "0",
    REDIS_URL: inject("redisUrl"),
    QUEUE_PREFIX: prefix,
    SIGNING_SECRET: `${TEST_SECRET},${TEST_SECRET_2}`,
    LOG_LEVEL: "debug",
    ...env,
  });
  const logs = captureLogs();
  const logger = createLogger({ level: config.logLevel, destination: logs.stream, secrets: config.signingSecrets });
  const database = await openTestDatabase(preferredDriver(), { migrations: 0 });
  const service = await createService({ config, logger, database });
  const url = await service.start();
  const inspector = new Redis(config.redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue(EVENTS_QUEUE, { connection: inspector, prefix });
  const post = (body: string | Uint8Array, headers: Record<string, string> = {}) =>
    fetch(`${url}/webhooks`, { method: "POST", body, headers: { "content-type": "application/json", ...headers } });
  return {
    url,
    service,
    prefix,
    logs,
    queue,
    redis: inspector,
    async stored() {
      const jobs = await queue.getJobs(["waiting", "active", "completed", "failed", "delayed"]);
      return [...(await streamEvents(inspector, prefix)), ...jobs.map((j) => j.data as EventJobData)];
    },
    post,
    postSigned(body, secret = TEST_SECRET) {
      const text = typeof body === "string" ? body : JSON.stringify(body);
      return post(text, { "x-svc-signature": signPayload(text, secret) });
    },
    async stop() {
      await service.stop();
      await database.close();
      // Best-effort cleanup: the queue may already be gone.
      await queue.obliterate({ force: true }).catch(() => undefined);
      await inspector.del(redisKeys(prefix).ingest.stream);
      await queue.close();
      await inspector.quit();
    },
  };
}

export function sampleEvent(overrides: Record<string, unknown> = {}) {
  return {
    id: `evt_${randomUUID()}`,
    type: "order.created",
    createdAt: new Date().toISOString(),
    data: { id: "ord_1", restaurantId: "rest_1" },
    ...overrides,
  };
}
