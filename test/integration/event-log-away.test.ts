import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import { afterEach, describe, expect, inject, it } from "vitest";
import { signPayload } from "../../src/events/envelope.js";
import { loadConfig } from "../../src/config/config.js";
import { createLogger } from "../../src/logging/logger.js";
import { createRedisConnection, redisKeys } from "../../src/redis/redis.js";
import { createService } from "../../src/service.js";
import type { EventHandlers } from "../../src/worker/handlers.js";
import { sampleEvent, TEST_SECRET } from "../helpers/edge.js";
import { findPostgresBin, startPostgresServer } from "../helpers/postgres-server.js";
import { waitForQueuesIdle } from "../helpers/queues-idle.js";
import { testDrivers } from "../helpers/postgres.js";
import { startService, type TestService } from "../helpers/service.js";
import { streamDrained } from "../helpers/stream-consumer.js";
import { waitFor } from "../helpers/wait-for.js";

let svc: TestService | undefined;
afterEach(async () => {
  await svc?.stop();
  svc = undefined;
});

/** Makes the event log refuse every write as a database that is away would (not the event's fault), and back. */
const eventsTable = (s: TestService) => ({
  away: () => sql`alter table ${sql.id(s.database.schema, "events")} rename to events_away`.execute(s.database.db),
  back: () => sql`alter table ${sql.id(s.database.schema, "events_away")} rename to events`.execute(s.database.db),
});

/** The stream consumer's gauges, as a scrape of /metrics shows them. */
async function gauges(s: TestService) {
  const text = (await s.service.metrics.render()).body;
  const value = (name: string) => Number(/^(\S+) (\S+)$/m.exec(text.split("\n").find((l) => l.startsWith(`${name} `)) ?? "")?.[2] ?? NaN);
  return {
    svc_event_log_waiting_attempts: value("svc_event_log_waiting_attempts"),
    svc_ingest_inflight_entries: value("svc_ingest_inflight_entries"),
    svc_ingest_inflight_bytes: value("svc_ingest_inflight_bytes"),
  };
}

describe.each(testDrivers())("the event log away while events arrive (%s)", (driver) => {
  it("holds the attempts, lets the stream grow until the edge answers 503, then records every event once", async () => {
    const runs = new Map<string, number>();
    const handlers: EventHandlers = { "*": (e) => void runs.set(e.id, (runs.get(e.id) ?? 0) + 1) };
    svc = await startService({ MAX_BACKLOG: "8", WORKER_CONCURRENCY: "3", LOG_LEVEL: "info" }, [handlers], { driver });
    const table = eventsTable(svc);
    await table.away();

    const accepted: string[] = [];
    let refused: Response | undefined;
    for (let i = 0; i < 40 && !refused; i++) {
      const event = sampleEvent({ type: "loyalty.points_awarded" });
      const res = await svc.deliver(event);
      if (res.status === 200) accepted.push(event.id);
      else refused = res;
    }
    // Nothing was acknowledged into the events queue: the attempts wait, holding their entries.
    expect(refused?.status).toBe(503);
    expect(refused?.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await svc.redis.xlen(redisKeys(svc.prefix).ingest.stream)).toBe(accepted.length);
    expect(await svc.service.eventsQueue.getJobCountByTypes("completed", "failed", "waiting", "active", "delayed")).toBe(0);
    expect(svc.service.worker!.streamConsumer.waitingOnLog()).toBe(true);
    expect(svc.logs.text()).toContain("holding the attempt until the event log answers");
    // The scrape shows what the consumer holds and how many attempts wait on the log.
    const held = await gauges(svc);
    expect(held.svc_event_log_waiting_attempts).toBeGreaterThan(0);
    expect(held.svc_ingest_inflight_entries).toBeGreaterThanOrEqual(held.svc_event_log_waiting_attempts);
    expect(held.svc_ingest_inflight_bytes).toBeGreaterThan(0);

    await table.back();
    await streamDrained(svc.redis, svc.prefix);
    await waitForQueuesIdle([svc.service.eventsQueue], { timeoutMs: 15_000, what: "the events queue to be idle" });
    await waitFor(() => !svc!.service.worker!.streamConsumer.waitingOnLog(), { what: "the consumer to stop waiting on the log" });
    await waitFor(async () => (await gauges(svc!)).svc_ingest_inflight_entries === 0, { what: "the consumer to hold nothing" });
    expect(await gauges(svc)).toMatchObject({ svc_event_log_waiting_attempts: 0, svc_ingest_inflight_bytes: 0 });
    for (const id of accepted) {
      expect(await svc.service.eventLog.get(id)).toMatchObject({ status: "handled", attempts: 1 });
      // Held, not rerun: each handler ran once.
      expect(runs.get(id)).toBe(1);
    }
    expect(await svc.service.eventsQueue.getJobCountByTypes("completed", "failed", "waiting", "active", "delayed")).toBe(0);
  });
});

describe("the PostgreSQL server stopped while events arrive", () => {
  // Without PostgreSQL binaries (an embedded-only run) the renamed-table case above stands in.
  it("holds the attempts while connections are refused, and records every event once when the server is back", async () => {
    const server = await startPostgresServer(await findPostgresBin());
    const runs = new Map<string, number>();
    const handlers: EventHandlers = { "*": (e) => void runs.set(e.id, (runs.get(e.id) ?? 0) + 1) };
    const prefix = `test-${randomUUID().slice(0, 8)}`;
    const config = loadConfig({
      HOST: "127.0.0.1",
      PORT: "0",
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: prefix,
      SIGNING_SECRET: TEST_SECRET,
      DATABASE_URL: server.url,
      MAX_BACKLOG: "8",
      WORKER_CONCURRENCY: "3",
      RECONCILE_INTERVAL_SECONDS: "0",
    });
    const service = await createService({ config, logger: createLogger({ level: "silent" }), handlers: [handlers] });
    const redis = createRedisConnection(config.redisUrl, "worker");
    try {
      const url = await service.start();
      const deliver = (event: object) => {
        const body = JSON.stringify(event);
        return fetch(`${url}/webhooks`, {
          method: "POST",
          body,
          headers: { "content-type": "application/json", "x-svc-signature": signPayload(body, TEST_SECRET) },
        });
      };
      await server.stop();
      const accepted: string[] = [];
      let refused: Response | undefined;
      for (let i = 0; i < 40 && !refused; i++) {
        const event = sampleEvent({ type: "loyalty.points_awarded" });
        const res = await deliver(event);
        if (res.status === 200) accepted.push(event.id);
        else refused = res;
      }
      expect(refused?.status).toBe(503);
      expect(await redis.xlen(redisKeys(prefix).ingest.stream)).toBe(accepted.length);
      expect(await service.eventsQueue.getJobCountByTypes("completed", "failed", "waiting", "active", "delayed")).toBe(0);
      expect(service.worker!.streamConsumer.waitingOnLog()).toBe(true);

      await server.start();
      await streamDrained(redis, prefix);
      for (const id of accepted) {
        expect(await service.eventLog.get(id)).toMatchObject({ status: "handled", attempts: 1 });
        expect(runs.get(id)).toBe(1);
      }
      expect(await service.eventsQueue.getJobCountByTypes("completed", "failed", "waiting", "active", "delayed")).toBe(0);
    } finally {
      await service.stop();
      await redis.quit();
      await server.destroy();
    }
  });
});
