import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REDIS_WAIT_MS } from "../../src/redis/redis.js";
import { startRedisServer, type RedisServer } from "../helpers/redis-server.js";
import { startService, type TestService } from "../helpers/service.js";
import { waitFor } from "../helpers/wait-for.js";

// This file owns a Redis it can stop and restart.
let redis: RedisServer;
let svc: TestService;
beforeAll(async () => {
  redis = await startRedisServer();
  svc = await startService({ ROLE: "worker", REDIS_URL: redis.url });
  svc.redis.on("error", () => undefined); // the test's own client, refused while Redis is stopped
});
afterAll(async () => {
  await redis.start();
  await svc.stop();
  await redis.destroy();
});

describe("/readyz in the worker role", () => {
  it("answers 503 with a reason while Redis is stopped (a hang fails the test's timeout), 200 again after", async () => {
    expect((await fetch(`${svc.url}/readyz`)).status).toBe(200);
    await redis.stop();
    const res = await fetch(`${svc.url}/readyz`);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ error: { code: "not_ready", message: expect.stringMatching(/Redis/) as unknown } });

    await redis.start();
    // The service's connection reconnects by itself; /readyz follows without a restart.
    await waitFor(async () => (await fetch(`${svc.url}/readyz`)).status === 200, { what: "/readyz to say ready again" });
  });

  it("answers 503 when Redis is connected but does not answer (paused), instead of waiting for it", async () => {
    // Longer than /readyz's bound (REDIS_WAIT_MS); UNPAUSE itself waits for the pause to end.
    await svc.redis.client("PAUSE", REDIS_WAIT_MS + 1000, "ALL");
    try {
      const res = await fetch(`${svc.url}/readyz`);
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({
        error: { code: "not_ready", message: expect.stringMatching(/did not answer within/) as unknown },
      });
    } finally {
      await svc.redis.client("UNPAUSE");
    }
  });
});
