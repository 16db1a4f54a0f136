import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { sampleEvent, startEdge, type TestEdge } from "../helpers/edge.js";
import { startRedisServer, type RedisServer } from "../helpers/redis-server.js";
import { waitFor } from "../helpers/wait-for.js";
import { streamEvents } from "../helpers/ingest-stream.js";

// This file owns a Redis it can stop, pause and restart.
let redis: RedisServer;
let edge: TestEdge;
beforeAll(async () => {
  redis = await startRedisServer({ appendOnly: true });
  edge = await startEdge({ REDIS_URL: redis.url, ENQUEUE_TIMEOUT_MS: "500" });
});
afterAll(async () => {
  await edge.stop();
  await redis.destroy();
});

/** A POST that fails the test instead of hanging when the edge does not answer within 3 s. */
const postWithin3s = (body: object) => {
  const text = JSON.stringify(body);
  return Promise.race([
    edge.postSigned(text),
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error("no answer within 3 s")), 3000)),
  ]);
};

describe("when Redis is down or slow", () => {
  it("answers 503 with Retry-After within 3 s when Redis is slow, and never 200", async () => {
    const admin = new Redis(redis.url);
    await admin.client("PAUSE", 2500, "WRITE");
    try {
      const event = sampleEvent();
      const res = await postWithin3s(event);
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("queue_unavailable");
    } finally {
      await admin.client("UNPAUSE");
      await admin.quit();
    }
  });

  it("answers 503 within 3 s while Redis is stopped, readyz says not ready, and recovers by itself", async () => {
    await redis.stop();
    const event = sampleEvent();
    const res = await postWithin3s(event);
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
    expect((await fetch(`${edge.url}/readyz`)).status).toBe(503);

    await redis.start();
    // The sender retries the same event until we answer 200; no restart of the edge.
    const accepted = await waitFor(
      async () => {
        const retry = await postWithin3s(event);
        return retry.status === 200 ? retry : undefined;
      },
      { what: "the edge to accept events again" },
    );
    expect(await accepted.json()).toMatchObject({ id: event.id });
    expect((await fetch(`${edge.url}/readyz`)).status).toBe(200);
    // Accepted means stored: in the ingest stream (this edge runs no worker).
    const ids = (await streamEvents(edge.redis, edge.prefix)).map((e) => e.id);
    expect(ids).toContain(event.id);
  });
});
