import { afterEach, beforeEach, describe, expect, it, onTestFinished } from "vitest";
import { createEventProducer } from "../../src/queue/events-queue.js";
import { UnstorableEventError } from "../../src/queue/errors.js";
import { sampleEvent, startEdge, type TestEdge } from "../helpers/edge.js";

let edge: TestEdge;
beforeEach(async () => {
  edge = await startEdge();
});
afterEach(async () => {
  await edge.stop();
});

/** `{"a":{"a":…}}` nested `depth` deep, as text (what a sender signs) or as an object. */
const nestedText = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
const nestedObject = (depth: number) => JSON.parse(nestedText(depth)) as unknown;

describe("a payload that cannot be stored", () => {
  it("answers 4xx to a deeply nested signed body while 100 valid neighbours are all accepted", async () => {
    const valid = Array.from({ length: 100 }, () => edge.postSigned(sampleEvent()));
    const deep = edge.postSigned(`{"type":"order.created","id":"evt_deep","data":${nestedText(5000)}}`);
    const answers = await Promise.all(valid);
    expect(answers.map((r) => r.status)).toEqual(Array(100).fill(200));
    const refused = await deep;
    expect(refused.status).toBe(400);
    expect(refused.headers.get("retry-after")).toBeNull();
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("payload_too_deep");
    expect(await edge.stored()).toHaveLength(100);
  });

  it("fails only its own caller in the producer's shared batch, never as a 503", async () => {
    // The direct BullMQ producer (createEventProducer, for library users who enqueue without the stream).
    const producer = createEventProducer({ connection: edge.redis, prefix: edge.prefix, dedupWindowSeconds: 60, timeoutMs: 2000 });
    onTestFinished(() => producer.close());
    const event = (payload: Record<string, unknown>) => ({
      id: `evt_${Math.random().toString(36).slice(2)}`,
      type: "order.created",
      receivedAt: new Date().toISOString(),
      payload,
    });
    const valid = Array.from({ length: 100 }, () => producer.enqueue(event(sampleEvent())));
    const deep = producer.enqueue(event({ data: nestedObject(20_000) })).then(
      () => undefined,
      (err: unknown) => err,
    );
    const results = await Promise.allSettled(valid);
    expect(results.filter((r) => r.status === "rejected")).toEqual([]);
    const err = await deep;
    expect(err).toBeInstanceOf(UnstorableEventError);
    expect(err).toMatchObject({ code: "unstorable_event" });
  });
});
