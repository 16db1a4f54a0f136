import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { signPayload } from "../../src/events/envelope.js";
import { redisKeys } from "../../src/redis/redis.js";
import { startConsumer, streamDrained } from "../helpers/stream-consumer.js";
import { sampleEvent, startEdge, TEST_SECRET, TEST_SECRET_2, type TestEdge } from "../helpers/edge.js";

let edge: TestEdge;
beforeEach(async () => {
  edge = await startEdge({ MAX_BODY_BYTES: "4096" });
});
afterEach(async () => {
  await edge.stop();
});

/** Events stored, in the ingest stream or (once a worker moved them) in the events queue. */
const jobCount = async () => (await edge.stored()).length;

async function errorOf(res: Response) {
  return ((await res.json()) as { error: { code: string; message: string } }).error;
}

// The edge's pure rules (every signature, envelope and size case) are tested in memory in
// test/unit/webhook-app.test.ts; here what needs a socket and a real Redis.
describe("POST /webhooks: signatures", () => {
  it("accepts a hex signature and enqueues the event with its whole payload", async () => {
    const event = sampleEvent({ extra: { kept: true } });
    const res = await edge.postSigned(event);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ received: true, id: event.id, duplicate: false });
    const [stored] = await edge.stored();
    expect(stored).toMatchObject({ id: event.id, type: "order.created", payload: event });
  });

  it("accepts either secret while one is rotated", async () => {
    expect((await edge.postSigned(sampleEvent(), TEST_SECRET)).status).toBe(200);
    expect((await edge.postSigned(sampleEvent(), TEST_SECRET_2)).status).toBe(200);
    expect(await jobCount()).toBe(2);
  });
});

describe("POST /webhooks: event ids", () => {
  it("uses the SHA-256 of the body as the id of an event without one", async () => {
    const body = JSON.stringify({ type: "review.created", data: { id: "rev_1" } });
    const first = (await (await edge.postSigned(body)).json()) as { id: string; duplicate: boolean };
    const second = (await (await edge.postSigned(body)).json()) as { id: string; duplicate: boolean };
    expect(first.id).toMatch(/^[0-9a-f]{64}$/);
    expect(second).toEqual({ received: true, id: first.id, duplicate: true });
    expect(await jobCount()).toBe(1);
  });
});

describe("POST /webhooks: size cap", () => {
  it("answers 413 for a chunked body without Content-Length that grows over the cap", async () => {
    const chunk = new TextEncoder().encode("x".repeat(1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 8) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const res = await fetch(`${edge.url}/webhooks`, {
      method: "POST",
      body: stream,
      headers: { "content-type": "application/json", "x-svc-signature": signPayload("irrelevant", TEST_SECRET) },
      duplex: "half",
    });
    expect(res.status).toBe(413);
    expect(await jobCount()).toBe(0);
  });

  it("accepts a chunked body under the cap", async () => {
    const body = JSON.stringify(sampleEvent());
    const bytes = new TextEncoder().encode(body);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes.slice(0, 10));
        controller.enqueue(bytes.slice(10));
        controller.close();
      },
    });
    const res = await fetch(`${edge.url}/webhooks`, {
      method: "POST",
      body: stream,
      headers: { "content-type": "application/json", "x-svc-signature": signPayload(body, TEST_SECRET) },
      duplex: "half",
    });
    expect(res.status).toBe(200);
  });
});

describe("POST /webhooks: idempotency", () => {
  it("enqueues a redelivery once while the first copy waits", async () => {
    const event = sampleEvent();
    expect(await (await edge.postSigned(event)).json()).toMatchObject({ duplicate: false });
    const again = await edge.postSigned(event);
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ duplicate: true });
    expect(await jobCount()).toBe(1);
  });

  it("enqueues concurrent duplicates exactly once", async () => {
    const event = sampleEvent();
    const answers = await Promise.all(Array.from({ length: 25 }, () => edge.postSigned(event)));
    expect(answers.map((r) => r.status)).toEqual(Array(25).fill(200));
    const bodies = (await Promise.all(answers.map((r) => r.json()))) as { duplicate: boolean }[];
    expect(bodies.filter((b) => !b.duplicate)).toHaveLength(1);
    expect(await jobCount()).toBe(1);
  });

  it("still drops a redelivery after the first copy finished and was removed", async () => {
    await edge.stop();
    edge = await startEdge({ KEEP_COMPLETED_JOBS: "0" });
    const event = sampleEvent();
    await edge.postSigned(event);
    // The worker role's consumer handles the event straight from the stream and deletes its entry.
    const consumer = startConsumer(edge.redis, edge.prefix, { handlers: { "*": () => undefined } });
    await streamDrained(edge.redis, edge.prefix);
    await consumer.stop();
    expect(await jobCount()).toBe(0);
    const again = await edge.postSigned(event);
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ duplicate: true });
    expect(await jobCount()).toBe(0);
  });

  it("enqueues the same id again once the window has passed", async () => {
    await edge.stop();
    edge = await startEdge({ DEDUP_WINDOW_SECONDS: "1" });
    const event = sampleEvent();
    await edge.postSigned(event);
    const dedupKey = redisKeys(edge.prefix).ingest.seen(event.id);
    const redis = edge.redis;
    expect(await redis.pttl(dedupKey)).toBeGreaterThan(0);
    await redis.del(dedupKey); // what the ttl does after DEDUP_WINDOW_SECONDS
    expect(await (await edge.postSigned(event)).json()).toMatchObject({ duplicate: false });
    expect(await jobCount()).toBe(2);
  });
});

describe("health and logs", () => {
  it("answers /healthz and /readyz", async () => {
    expect((await fetch(`${edge.url}/healthz`)).status).toBe(200);
    expect(await (await fetch(`${edge.url}/readyz`)).json()).toEqual({ status: "ready" });
  });

  it("answers unknown routes with a JSON 404", async () => {
    const res = await fetch(`${edge.url}/nope`);
    expect(res.status).toBe(404);
    expect((await errorOf(res)).code).toBe("not_found");
  });

  it("logs one line per request with the event, and no secret or signature", async () => {
    const event = sampleEvent();
    const body = JSON.stringify(event);
    const signature = signPayload(body, TEST_SECRET);
    await edge.post(body, { "x-svc-signature": signature, authorization: "Bearer svc_live_should_not_leak" });
    await edge.postSigned(sampleEvent(), "whsec_wrong");
    // A sender-chosen value that carries a configured secret is scrubbed from the request line too.
    await edge.postSigned({ ...sampleEvent(), id: `evt_${TEST_SECRET}` });
    const lines = edge.logs.records().filter((r) => r.msg === "request");
    expect(lines).toHaveLength(3);
    expect(lines[2]).toMatchObject({ status: 200, eventId: "evt_[Redacted]" });
    // An accepted delivery is a debug line (this edge logs at debug); a refusal is info.
    expect(lines.map((l) => l.level)).toEqual([20, 30, 20]);
    expect(lines[0]).toMatchObject({ method: "POST", path: "/webhooks", status: 200, eventId: event.id, eventType: "order.created" });
    expect(typeof lines[0]!.ms).toBe("number");
    expect(lines[1]).toMatchObject({ status: 401 });
    const text = edge.logs.text();
    for (const secret of [TEST_SECRET, TEST_SECRET_2, signature.slice(7), "svc_live_should_not_leak"]) {
      expect(text).not.toContain(secret);
    }
  });
});
