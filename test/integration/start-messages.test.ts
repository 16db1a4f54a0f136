import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { createLogger } from "../../src/logging/logger.js";
import { createService, type Service } from "../../src/service.js";
import { TEST_SECRET } from "../helpers/edge.js";
import { captureLogs } from "../helpers/log-capture.js";
import { openTestDatabase, type TestDatabase } from "../helpers/postgres.js";

let service: Service | undefined;
let database: TestDatabase | undefined;
afterEach(async () => {
  await service?.stop();
  await database?.close();
  service = database = undefined;
});

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

describe("a production start says what is missing", () => {
  it("with no reachable Redis and no ADMIN_TOKEN: one line naming REDIS_URL (password masked), one saying the console is off", async () => {
    const port = await closedPort();
    const config = loadConfig({
      ROLE: "web",
      HOST: "127.0.0.1",
      PORT: "0",
      SIGNING_SECRET: TEST_SECRET,
      REDIS_URL: `redis://:pa55-w0rd@127.0.0.1:${port}`,
    });
    const logs = captureLogs();
    database = await openTestDatabase("embedded");
    service = await createService({ config, logger: createLogger({ level: "info", destination: logs.stream }), database });
    // start() gives Redis 2 s: ioredis tries about five times meanwhile (100, 200, 400, 800 ms apart).
    await service.start();

    const warnings = logs.records().filter((r) => r.level === 40);
    const redis = warnings.filter((r) => String(r.msg).includes("Redis"));
    expect(redis.map((r) => r.msg)).toEqual([
      `Redis at redis://:***@127.0.0.1:${port} does not answer (ECONNREFUSED): is it running, and is REDIS_URL set to it? Retrying every 2 s`,
    ]);
    expect(warnings.map((r) => r.msg)).toContainEqual(expect.stringContaining("ADMIN_TOKEN is not set: the console (/console)"));
    expect(logs.text()).not.toContain("pa55-w0rd");

    for (const path of ["/console", "/console/events"]) {
      const res = await service.app.request(path);
      expect(res.status).toBe(404);
      expect(await res.text()).toContain("ADMIN_TOKEN is not set on this service");
    }
  });
});
