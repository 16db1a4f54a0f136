import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createHandlerRegistry } from "../../src/events/dispatch.js";
import { createLogger } from "../../src/logging/logger.js";
import { createDatabase, type Database } from "../../src/mirror/database.js";
import { createEventLog, type EventAttempt } from "../../src/mirror/event-log.js";
import { migrateToLatest } from "../../src/mirror/database.js";
import { type EventJobData, createEventWorker, retentionJobOptions, retryJobOptions } from "../../src/queue/events-queue.js";
import { createAttemptRunner } from "../../src/queue/attempt-runner.js";
import { createRedisConnection, type RedisClient } from "../../src/redis/redis.js";
import { captureLogs } from "../helpers/log-capture.js";
import { findPostgresBin, startPostgresServer, type PostgresServer } from "../helpers/postgres-server.js";
import { randomSchema } from "../helpers/postgres.js";
import { waitFor } from "../helpers/wait-for.js";

// This file stops and starts a PostgreSQL server of its own.

describe("the events queue's attempts while the event log cannot record", () => {
  let postgres: PostgresServer;
  let database: Database;
  let connection: RedisClient;
  beforeAll(async () => {
    postgres = await startPostgresServer(await findPostgresBin());
    database = await createDatabase({ url: postgres.url, dataDir: "", schema: randomSchema() });
    await migrateToLatest(database);
    connection = createRedisConnection(inject("redisUrl"), "worker");
  });
  afterAll(async () => {
    await connection.quit();
    await database.close().catch(() => undefined);
    await postgres.destroy();
  });

  it("loses no event with KEEP_FAILED_JOBS=1: an attempt the log cannot take holds its job, spending no attempt; a stop puts it back carrying its outcomes; the next worker records it", async () => {
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
    const logger = createLogger({ level: "info", destination: logs.stream });
    const runner = createAttemptRunner<object>({
      registry,
      logger,
      makeContext: () => ({}),
      logWaitMs: 20,
      // The real event log, counting the attempts it was asked to record.
      eventLog: {
        recordAttempt(attempt: EventAttempt) {
          tries.set(attempt.id, (tries.get(attempt.id) ?? 0) + 1);
          return log.recordAttempt(attempt);
        },
        holds: (id) => log.holds(id),
      },
    });
    const workerOf = () => createEventWorker({ connection, prefix, runner, concurrency: 6, logger, heldRetryMs: 20 });
    const ids = Array.from({ length: 6 }, (_, i) => `evt_unrec_${i}`);
    let worker = workerOf();
    try {
      await postgres.stop();
      void worker.run();
      await queue.addBulk(
        ids.map((id) => ({
          name: "test.event",
          data: { id, type: "test.event", receivedAt: new Date().toISOString(), payload: { n: 1 } },
        })),
      );
      // Each event asked the log three times, more than its attempts: its job is held, not failed.
      await waitFor(() => ids.every((id) => (tries.get(id) ?? 0) >= 3), { what: "every event to be refused by the log three times" });
      expect(runner.waitingOnLog()).toBe(ids.length);
      expect(await queue.getFailedCount()).toBe(0);
      // Logged once per attempt, not once per refusal.
      expect(logs.text().match(/holding the attempt until the event log answers/g)?.length).toBe(ids.length);

      // A stop while the log is away: every held job goes back to the delayed set with its handlers' successes.
      await worker.close();
      expect(await queue.getFailedCount()).toBe(0);
      const delayed = await queue.getDelayed();
      expect(delayed.map((j) => j.data.id).sort()).toEqual(ids);
      // Each success carries its run: the attempt that ran it, when and how long.
      const run = { attempt: 1, of: 2, startedAt: expect.any(Number) as number, durationMs: expect.any(Number) as number };
      expect(delayed[0]?.progress).toEqual({ done: ["app:test.event"], unrecorded: { "app:test.event": { status: "ok", run } } });

      await postgres.start();
      worker = workerOf();
      void worker.run();
      await waitFor(async () => (await Promise.all(ids.map((id) => log.get(id)))).every((e) => e?.status === "handled"), {
        what: "every event to be recorded handled",
        timeoutMs: 60_000,
      });
      // Each handler ran once: the next attempt records the outcomes it carries instead of running them again.
      expect(runs).toBe(ids.length);
      expect((await log.get(ids[0]!))?.handlers).toEqual({ "app:test.event": { status: "ok", attempts: 1 } });
      // Recorded by a later attempt, the success is still a row of the attempt that ran it.
      expect((await log.handlerAttempts(ids[0]!)).map((r) => [r.attempt, r.of, r.outcome])).toEqual([[1, 2, "ok"]]);
    } finally {
      await worker.close();
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });
});
