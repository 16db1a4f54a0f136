import { createHash, createHmac } from "node:crypto";
import { pino } from "pino";
import { beforeEach, describe, expect, it } from "vitest";
import { signPayload } from "../../src/events/envelope.js";
import { createApp } from "../../src/http/app.js";
import { memorySink } from "../helpers/memory-sink.js";

// The edge's rules, tested in memory with app.request() as hono's own suite does: no socket,
// no Redis. The sink below keeps events in an array and deduplicates by id like the real one.
const SECRETS = ["whsec_unit_primary", "whsec_unit_rotated"];
const MAX_BODY_BYTES = 1024;

const mem = memorySink();
const { sink, stored } = mem;
const app = createApp({
  logger: pino({ level: "silent" }),
  ready: () => Promise.resolve(),
  webhooks: { sink, signingSecrets: SECRETS, maxBodyBytes: MAX_BODY_BYTES },
});

beforeEach(() => mem.reset());

const post = (body: string | Uint8Array | ReadableStream<Uint8Array>, headers: Record<string, string> = {}) =>
  app.request("/webhooks", {
    method: "POST",
    body,
    headers: { "content-type": "application/json", ...headers },
    ...(body instanceof ReadableStream ? { duplex: "half" } : {}),
  });
const postSigned = (body: string, secret = SECRETS[0]!) => post(body, { "x-svc-signature": signPayload(body, secret) });
const event = (fields: Record<string, unknown> = {}) =>
  JSON.stringify({
    id: "evt_1",
    type: "order.created",
    createdAt: "2026-11-23T10:00:00Z",
    data: { id: "ord_1", restaurantId: "rest_1" },
    ...fields,
  });

describe("content type", () => {
  it.each(["application/json", "Application/JSON; charset=UTF-8", "application/json;charset=utf8", "application/cloudevents+json"])(
    "accepts %s",
    async (type) => {
      const body = event();
      expect((await post(body, { "content-type": type, "x-svc-signature": signPayload(body, SECRETS[0]!) })).status).toBe(200);
    },
  );

  it.each(["text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "application/json; charset=latin1", "application/jsonx", ""])(
    "refuses %j with 415 before reading the body, and stores nothing",
    async (type) => {
      let pulled = false;
      const body = new ReadableStream<Uint8Array>(
        {
          pull(controller) {
            pulled = true;
            controller.enqueue(new TextEncoder().encode(event()));
            controller.close();
          },
        },
        { highWaterMark: 0 },
      );
      const res = await post(body, { "content-type": type, "x-svc-signature": signPayload(event(), SECRETS[0]!) });
      expect(res.status).toBe(415);
      expect(await res.json()).toMatchObject({ error: { code: "unsupported_media_type" } });
      expect(pulled).toBe(false);
      expect(stored).toEqual([]);
    },
  );

  it("refuses a body without a Content-Type", async () => {
    const body = event();
    const res = await app.request("/webhooks", {
      method: "POST",
      body: new TextEncoder().encode(body),
      headers: { "x-svc-signature": signPayload(body, SECRETS[0]!) },
    });
    expect(res.status).toBe(415);
    expect(stored).toEqual([]);
  });
});

describe("payloads that cannot be kept as signed", () => {
  const signed = (body: string) => post(body, { "x-svc-signature": signPayload(body, SECRETS[0]!) });

  it.each([
    ['{"id":"evt_n","type":"order.created","data":{"n":1e400}}', "1e400"],
    ['{"id":"evt_n","type":"order.created","data":{"n":-1E+999}}', "-1E+999"],
    ['{"id":"evt_n","type":"order.created","data":{"n":1e-400}}', "1e-400"],
    ['{"id":"evt_n","type":"order.created","data":{"n":12345678901234567891}}', "12345678901234567891"],
    // After whitespace, in an array, and an underflow written without an exponent.
    ['{"id":"evt_n","type":"order.created","data":{"n" :\n\t 1.5e-400}}', "1.5e-400"],
    ['{"id":"evt_n","type":"order.created","data":[1, 2,  -9007199254740993]}', "-9007199254740993"],
    [`{"id":"evt_n","type":"order.created","data":[0.${"0".repeat(400)}1]}`, "0.000"],
  ])("refuses %s with 400 unkeepable_payload naming the number", async (body, token) => {
    const res = await signed(body);
    expect(res.status).toBe(400);
    const answer = (await res.json()) as { error: { code: string; message: string } };
    expect(answer.error.code).toBe("unkeepable_payload");
    expect(answer.error.message).toContain(token);
    expect(stored).toEqual([]);
  });

  it.each([
    '{"id":"evt_p","type":"order.created","__proto__":{"x":1}}',
    '{"id":"evt_p","type":"order.created","data":[{"__proto__":null}]}',
  ])("refuses a __proto__ key, naming its path: %s", async (body) => {
    const res = await signed(body);
    expect(res.status).toBe(400);
    const answer = (await res.json()) as { error: { code: string; message: string } };
    expect(answer.error.code).toBe("unkeepable_payload");
    expect(answer.error.message).toMatch(/\$(\.data\[0\])?\.__proto__/);
    expect(stored).toEqual([]);
  });

  it("keeps numbers a 64-bit float holds and the text __proto__ inside strings", async () => {
    const body =
      '{"id":"evt_ok","type":"order.created","data":{"a":1e300,"b":0.1,"c":9007199254740991,"d":1e-300,"e":10000000000000000000,"s":"__proto__ 1e400","u":"evt_3e456_12345678901234567"}}';
    expect((await signed(body)).status).toBe(200);
    expect(stored[0]!.payload).toEqual(JSON.parse(body));
  });
});

describe("signatures", () => {
  it("accepts a hex signature and stores the whole payload", async () => {
    const res = await postSigned(event({ extra: { kept: true } }));
    expect(res.status).toBe(200);
    // In memory (no Node response to set it on), the answer is named as over HTTP (ops-routes.test.ts).
    expect(res.headers.get("x-served-by")).toBe("svc-webhooks");
    expect(await res.json()).toEqual({ received: true, id: "evt_1", duplicate: false });
    expect(stored[0]).toMatchObject({ id: "evt_1", type: "order.created", payload: { extra: { kept: true } } });
  });

  it("accepts standard and URL-safe base64 digests", async () => {
    const body = event();
    const digest = createHmac("sha256", SECRETS[0]!).update(body).digest("base64");
    expect((await post(body, { "x-svc-signature": `sha256=${digest}` })).status).toBe(200);
    const urlSafe = digest.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    expect((await post(body, { "x-svc-signature": `sha256=${urlSafe}` })).status).toBe(200);
  });

  it("accepts either secret while one is rotated", async () => {
    expect((await postSigned(event({ id: "a" }), SECRETS[1])).status).toBe(200);
    expect((await postSigned(event({ id: "b" }), "whsec_someone_else")).status).toBe(401);
  });

  it.each([
    ["missing", () => ({})],
    ["empty", () => ({ "x-svc-signature": "" })],
    ["malformed", () => ({ "x-svc-signature": "sha256=not-a-digest" })],
    ["sha256=-less", (b: string) => ({ "x-svc-signature": createHmac("sha256", SECRETS[0]!).update(b).digest("hex") })],
    ["truncated", (b: string) => ({ "x-svc-signature": signPayload(b, SECRETS[0]!).slice(0, -2) })],
    ["re-serialized-JSON", (b: string) => ({ "x-svc-signature": signPayload(JSON.stringify(JSON.parse(b), null, 2), SECRETS[0]!) })],
  ])("refuses a %s signature with 401 and stores nothing", async (_what, headers) => {
    const body = event();
    const res = await post(body, headers(body));
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: { code: "invalid_signature" } });
    expect(stored).toEqual([]);
  });

  it.each([
    ["no", {}],
    ["a malformed", { "x-svc-signature": "sha256=not-a-digest" }],
  ])("refuses a delivery with %s signature header 401 without pulling a byte of its body", async (_what, headers) => {
    let pulls = 0;
    // highWaterMark 0: the stream is pulled only when someone reads it, never on construction.
    const body = new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          pulls++;
          controller.enqueue(new TextEncoder().encode(event()));
        },
      },
      { highWaterMark: 0 },
    );
    const res = await post(body, headers);
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: { code: "invalid_signature" } });
    expect(pulls).toBe(0);
  });

  it("refuses an unsigned delivery 401 before looking at its size (no 413 for a body it never reads)", async () => {
    const body = event({ pad: "x".repeat(MAX_BODY_BYTES) });
    const res = await post(body, { "content-length": String(Buffer.byteLength(body)) });
    expect(res.status).toBe(401);
  });

  it("refuses a signed body whose bytes changed in transit", async () => {
    const body = event();
    expect((await post(body.replace("rest_1", "rest_2"), { "x-svc-signature": signPayload(body, SECRETS[0]!) })).status).toBe(401);
  });

  it("checks the signature before parsing: unsigned garbage is a 401, not a 400", async () => {
    expect((await post("{not json", { "x-svc-signature": signPayload("other", SECRETS[0]!) })).status).toBe(401);
  });
});

describe("envelope", () => {
  it.each([
    ["not JSON", "{nope"],
    ["not an object", "[1,2]"],
    ["without a type", JSON.stringify({ id: "x" })],
    ["with a non-string type", JSON.stringify({ type: 42 })],
    ["with a non-string id", JSON.stringify({ id: 7, type: "order.created" })],
  ])("answers 400 to a signed body %s", async (_what, body) => {
    const res = await postSigned(body);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { code: "invalid_event" } });
    expect(stored).toEqual([]);
  });

  it.each([".", ".."])(
    "refuses the event id %j 400 invalid_event_id, stores nothing (no operator route could open or replay it alone)",
    async (id) => {
      const res = await postSigned(event({ id }));
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({
        error: { code: "invalid_event_id", message: expect.stringContaining('not "." or ".."') as string },
      });
      expect(stored).toEqual([]);
    },
  );

  it("accepts ids made of dots that are no dot segment", async () => {
    expect((await postSigned(event({ id: "..." }))).status).toBe(200);
    expect((await postSigned(event({ id: ".a" }))).status).toBe(200);
  });

  it("accepts an unknown event type (refusing it would make the sender retry forever)", async () => {
    expect((await postSigned(event({ type: "table.wiped" }))).status).toBe(200);
    expect(stored.map((e) => e.type)).toEqual(["table.wiped"]);
  });

  it.each(["change.order", "change.booking", "change.menu_item", "change.anything_else"])(
    "refuses a signed delivery of the reserved type %s with 400 reserved_event_type (only the mirror produces change events)",
    async (type) => {
      const res = await postSigned(event({ type }));
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ error: { code: "reserved_event_type" } });
      expect(stored).toEqual([]);
    },
  );

  it("still accepts a type that merely contains change (changelog.updated, order.changed)", async () => {
    expect((await postSigned(event({ id: "a", type: "changelog.updated" }))).status).toBe(200);
    expect((await postSigned(event({ id: "b", type: "order.changed" }))).status).toBe(200);
  });

  it("uses the SHA-256 of the body as the id of an event without one", async () => {
    const body = JSON.stringify({ type: "review.created", data: {} });
    const res = await postSigned(body);
    expect(await res.json()).toMatchObject({ id: createHash("sha256").update(body).digest("hex") });
  });
});

describe("size cap", () => {
  it("answers 413 when Content-Length is over MAX_BODY_BYTES", async () => {
    const body = event({ pad: "x".repeat(MAX_BODY_BYTES) });
    const res = await post(body, { "x-svc-signature": signPayload(body, SECRETS[0]!), "content-length": String(Buffer.byteLength(body)) });
    expect(res.status).toBe(413);
    expect(stored).toEqual([]);
  });

  it("answers 413 for a streamed body without Content-Length that grows over the cap", async () => {
    const chunk = new TextEncoder().encode("x".repeat(300));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 10) controller.enqueue(chunk);
        else controller.close();
      },
    });
    expect((await post(stream, { "x-svc-signature": signPayload("x", SECRETS[0]!) })).status).toBe(413);
  });
});

describe("enqueue", () => {
  it("answers a redelivery 200 with duplicate: true and stores it once", async () => {
    await postSigned(event());
    const again = await postSigned(event());
    expect(await again.json()).toMatchObject({ duplicate: true });
    expect(stored).toHaveLength(1);
  });

  it("answers 503 with Retry-After, never 200, when the queue cannot take the event", async () => {
    mem.failing = true;
    const res = await postSigned(event());
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("5");
    expect(await res.json()).toMatchObject({ error: { code: "queue_unavailable" } });
  });
});
