import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createHandlerRegistry } from "../../src/events/registry.js";
import { createLogger } from "../../src/logging/logger.js";
import { createDatabase, type Database } from "../../src/mirror/database.js";
import { createEventLog, type EventAttempt } from "../../src/mirror/event-log.js";
import { migrateToLatest } from "../../src/mirror/migrate.js";
import type { EventJobData } from "../../src/queue/event-job.js";
import { createEventWorker } from "../../src/queue/event-worker.js";
import { retentionJobOptions, retryJobOptions } from "../../src/queue/job-options.js";
import { createRedisConnection, type RedisClient } from "../../src/redis/connection.js";
import { captureLogs } from "../helpers/log-capture.js";
import { findPostgresBin, startPostgresServer, type PostgresServer } from "../helpers/postgres-server.js";
import { randomSchema } from "../helpers/postgres.js";
import { waitFor } from "../helpers/wait-for.js";

// This file stops and starts a PostgreSQL server of its own.
const bin = findPostgresBin();

describe.skipIf(!bin)("the event worker while the event log cannot record", () => {
  let postgres: PostgresServer;
  let database: Database;
  let connection: RedisClient;
  beforeAll(async () => {
    postgres = await startPostgresServer(bin!);
    database = await createDatabase({ url: postgres.url, dataDir: "", schema: randomSchema() });
    await migrateToLatest(database);
    connection = createRedisConnection(inject("redisUrl"), "worker");
  });
  afterAll(async () => {
    await connection.quit();
    await database.close().catch(() => undefined);
    await postgres.destroy();
  });

  it("loses no event with KEEP_FAILED_JOBS=1: an unrecorded attempt waits in the queue, spending no attempt, and is recorded once the database is back", async () => {
    const prefix = `test-unrec-${randomUUID().slice(0, 8)}`;
    const queue = new Queue<EventJobData>("events", {
      connection,
      prefix,
      // Two attempts and a failed set of one: before, every event here failed for good, unrecorded, and all but one were trimmed.
      defaultJobOptions: {
        ...retryJobOptions(2, 10),
        ...retentionJobOptions({ completed: { count: 0, ageSeconds: 0 }, failed: { count: 1, ageSeconds: 3600 } }),
      },
    });
    const log = createEventLog(database.db);
    const tries = new Map<string, number>();
    let runs = 0;
    const registry = createHandlerRegistry<object>();
    registry.on(
      "test.event",
      () => {
        runs++;
      },
      "app",
    );
    const logs = captureLogs();
    const worker = createEventWorker<object>({
      connection,
      prefix,
      registry,
      concurrency: 4,
      logger: createLogger({ level: "info", destination: logs.stream }),
      makeContext: () => ({}),
      recordRetryMs: 20,
      // The real event log, counting the attempts it was asked to record.
      journal: {
        recordAttempt(attempt: EventAttempt) {
          tries.set(attempt.id, (tries.get(attempt.id) ?? 0) + 1);
          return log.recordAttempt(attempt);
        },
      },
    });
    const ids = Array.from({ length: 6 }, (_, i) => `evt_unrec_${i}`);
    try {
      await postgres.stop();
      void worker.run();
      await queue.addBulk(
        ids.map((id) => ({
          name: "test.event",
          data: { id, type: "test.event", receivedAt: new Date().toISOString(), payload: { n: 1 } },
        })),
      );
      // Each event asked the log three times, more than its attempts, or left the queue's live states.
      const live = async () => new Set((await queue.getJobs(["delayed", "wait", "active"])).map((j) => j.data.id));
      await waitFor(
        async () => {
          const waiting = await live();
          return ids.every((id) => (tries.get(id) ?? 0) >= 3 || !waiting.has(id));
        },
        { what: "every event to be refused by the log three times, or to leave the queue" },
      );
      expect(await queue.getFailedCount()).toBe(0);
      expect([...(await live())].sort()).toEqual(ids);
      // Logged once per job, not once per refusal.
      expect(logs.text().match(/could not record the event's attempt/g)?.length).toBe(ids.length);

      await postgres.start();
      await waitFor(async () => (await Promise.all(ids.map((id) => log.get(id)))).every((e) => e?.status === "handled"), {
        what: "every event to be recorded handled",
        timeoutMs: 60_000,
      });
      // Each handler ran once: a deferred attempt records the outcomes it carries instead of running them again.
      expect(runs).toBe(ids.length);
      expect((await log.get(ids[0]!))?.handlers).toEqual({ "app:test.event": { status: "ok", attempts: 1 } });
    } finally {
      await worker.close();
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });
});
