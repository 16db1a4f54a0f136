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

const post = (body: object) => edge.postSigned(JSON.stringify(body));

describe("when Redis is down or slow", () => {
  it("answers 503 with Retry-After when Redis is slow (ENQUEUE_TIMEOUT_MS), and never 200", async () => {
    const admin = new Redis(redis.url);
    // Writes wait far longer than the enqueue timeout (500 ms) and than this test may take: a 200
    // could only come after the pause, a 503 only from the edge giving up on Redis in time.
    await admin.client("PAUSE", 25_000, "WRITE");
    try {
      const event = sampleEvent();
      const res = await post(event);
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("queue_unavailable");
    } finally {
      await admin.client("UNPAUSE");
      await admin.quit();
    }
  });

  it("answers 503 while Redis is stopped (not waiting for it to come back), readyz says not ready, and recovers by itself", async () => {
    await redis.stop();
    const event = sampleEvent();
    // Redis stays stopped until this answer is in: an edge that waited for it would never answer.
    const res = await post(event);
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
    expect((await fetch(`${edge.url}/readyz`)).status).toBe(503);

    await redis.start();
    // The sender retries the same event until we answer 200; no restart of the edge.
    const accepted = await waitFor(
      async () => {
        const retry = await post(event);
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
