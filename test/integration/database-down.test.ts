import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, inject, it } from "vitest";
import { signPayload } from "../../src/events/envelope.js";
import { loadConfig } from "../../src/config/config.js";
import { createLogger } from "../../src/logging/logger.js";
import { freePort } from "../../src/redis/local-server.js";
import { createService, type Service } from "../../src/service.js";
import { sampleEvent, TEST_SECRET } from "../helpers/edge.js";
import { captureLogs } from "../helpers/log-capture.js";
import { waitFor } from "../helpers/wait-for.js";

// A PostgreSQL that does not answer: a free port nobody listens on.
let service: Service | undefined;
afterEach(async () => {
  await service?.stop();
  service = undefined;
});

async function serviceWithDeadDatabase(role: "web" | "worker") {
  const config = loadConfig({
    ROLE: role,
    HOST: "127.0.0.1",
    PORT: "0",
    REDIS_URL: inject("redisUrl"),
    QUEUE_PREFIX: `test-dbdown-${randomUUID().slice(0, 8)}`,
    SIGNING_SECRET: TEST_SECRET,
    DATABASE_URL: `postgres://svc:hunter2-db-password@127.0.0.1:${await freePort()}/svc`,
    LOG_LEVEL: "info",
  });
  const logs = captureLogs();
  service = await createService({ config, logger: createLogger({ level: "info", destination: logs.stream }) });
  return { service, logs };
}

describe("a database that is down", () => {
  it("leaves the edge answering 200: a web process depends on Redis only", async () => {
    const { service, logs } = await serviceWithDeadDatabase("web");
    const url = await service.start();
    const errors = logs.records().filter((r) => r.level === 50);
    expect(errors[0]?.msg).toMatch(
      /^PostgreSQL at 127\.0\.0\.1:\d+\/svc does not answer \(ECONNREFUSED\): is it running, and is DATABASE_URL set to it\?/,
    );
    expect(logs.text()).not.toContain("database opened");
    expect(logs.text()).not.toContain("hunter2-db-password");
    const body = JSON.stringify(sampleEvent());
    const res = await fetch(`${url}/webhooks`, {
      method: "POST",
      body,
      headers: { "content-type": "application/json", "x-svc-signature": signPayload(body, TEST_SECRET) },
    });
    expect(res.status).toBe(200);
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
  });

  it("fails a worker's start with one error naming DATABASE_URL, and nothing says the database opened or migrated", async () => {
    const { service, logs } = await serviceWithDeadDatabase("worker");
    const error = (await service.start().catch((e: unknown) => e)) as Error;
    expect(error.message).toMatch(
      /^PostgreSQL at 127\.0\.0\.1:\d+\/svc does not answer \(ECONNREFUSED\): is it running, and is DATABASE_URL set to it\?$/,
    );
    expect(error.message).not.toContain("hunter2-db-password");
    expect(logs.text()).not.toMatch(/database (opened|migrated)/);
  });

  it("makes a worker's /readyz answer 503 and say that the database does not answer", async () => {
    const { service } = await serviceWithDeadDatabase("worker");
    // Once Redis is connected, only the database can make the worker unready.
    let res: Response | undefined;
    await waitFor(
      async () => {
        res = await service.app.request("/readyz");
        const body = (await res.clone().json()) as { error?: { message: string } };
        return body.error?.message.includes("database") === true;
      },
      { what: "the readiness check to name the database" },
    );
    expect(res!.status).toBe(503);
    expect(JSON.stringify(await res!.json())).not.toContain("127.0.0.1");
  });
});
