import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import { afterEach, describe, expect, inject, it } from "vitest";
import { signPayload } from "../../src/events/envelope.js";
import { loadConfig } from "../../src/config/config.js";
import { createLogger } from "../../src/logging/logger.js";
import { createService, type Service } from "../../src/service.js";
import { sampleEvent, TEST_SECRET } from "../helpers/edge.js";
import { captureLogs } from "../helpers/log-capture.js";
import { openTestDatabase, type TestDatabase } from "../helpers/postgres.js";
import { waitFor } from "../helpers/wait-for.js";

let service: Service | undefined;
let database: TestDatabase | undefined;
afterEach(async () => {
  await service?.stop();
  await database?.close();
  service = database = undefined;
});

describe("readiness of a role that records events", () => {
  it("answers 503 on the embedded store while the event log cannot write (select 1 still answers), and 200 once it records again", async () => {
    database = await openTestDatabase("embedded");
    const config = loadConfig({
      ROLE: "all",
      HOST: "127.0.0.1",
      PORT: "0",
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: `test-recready-${randomUUID().slice(0, 8)}`,
      SIGNING_SECRET: TEST_SECRET,
      JOB_BACKOFF_MS: "20",
      LOG_LEVEL: "info",
    });
    service = await createService({ config, logger: createLogger({ level: "info", destination: captureLogs().stream }), database });
    const url = await service.start();
    const ready = async () => (await fetch(`${url}/readyz`)).status;
    expect(await ready()).toBe(200);

    // The log's table is away: a real write error, as on a full disk, while `select 1` answers.
    await sql`alter table events rename to events_away`.execute(database.db);
    const ev = sampleEvent();
    const body = JSON.stringify(ev);
    expect(
      (
        await fetch(`${url}/webhooks`, {
          method: "POST",
          body,
          headers: { "content-type": "application/json", "x-svc-signature": signPayload(body, TEST_SECRET) },
        })
      ).status,
    ).toBe(200);
    // The stream consumer holds the event's attempt and retries the write (event-log-away.test.ts).
    const res = await waitFor(
      async () => {
        const r = await fetch(`${url}/readyz`);
        return r.status === 503 ? r : undefined;
      },
      { what: "/readyz to answer 503 while the log cannot record" },
    );
    expect(service.worker!.streamConsumer.waitingOnLog()).toBe(true);
    expect(await res.json()).toEqual({
      error: { code: "not_ready", message: expect.stringMatching(/event log cannot record/) as unknown },
    });

    await sql`alter table events_away rename to events`.execute(database.db);
    await waitFor(async () => (await service!.eventLog.get(ev.id))?.status === "handled", {
      what: "the event to be recorded",
      timeoutMs: 30_000,
    });
    expect(await ready()).toBe(200);
  });
});
