import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { BodyTimeoutError, PayloadTooLargeError } from "../../src/http/errors.js";
import { readRawBody } from "../../src/http/raw-body.js";

// In memory (app.request) there is no Node request: the web-stream path counts the bytes.
const app = new Hono();
app.post("/", async (c) => {
  try {
    return c.json({ bytes: (await readRawBody(c, { maxBytes: 10 })).byteLength });
  } catch (err) {
    if (err instanceof PayloadTooLargeError) return c.json({ error: err.code }, 413);
    throw err;
  }
});

const stream = (...parts: string[]) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (const p of parts) controller.enqueue(new TextEncoder().encode(p));
      controller.close();
    },
  });

describe("readRawBody", () => {
  it("reads a streamed body under the cap", async () => {
    const res = await app.request("/", { method: "POST", body: stream("12345", "678"), duplex: "half" });
    expect(await res.json()).toEqual({ bytes: 8 });
  });

  it("stops a streamed body at the cap", async () => {
    const res = await app.request("/", { method: "POST", body: stream("123456", "789012"), duplex: "half" });
    expect(res.status).toBe(413);
  });

  it("refuses a declared Content-Length over the cap without reading", async () => {
    const res = await app.request("/", { method: "POST", body: "x".repeat(11), headers: { "content-length": "11" } });
    expect(res.status).toBe(413);
  });
});

describe("readRawBody's deadline", () => {
  it("gives up on a body that does not arrive within it, whatever Content-Length declared", async () => {
    const timed = new Hono();
    timed.post("/", async (c) => {
      try {
        return c.json({ bytes: (await readRawBody(c, { maxBytes: 10, deadlineMs: 50 })).byteLength });
      } catch (err) {
        if (err instanceof BodyTimeoutError) return c.json({ error: err.code }, 408);
        throw err;
      }
    });
    // A stream that sends one chunk and never ends.
    const stalled = new ReadableStream<Uint8Array>({ start: (controller) => controller.enqueue(new Uint8Array(3)) });
    const res = await timed.request("/", { method: "POST", body: stalled, duplex: "half", headers: { "content-length": "8" } });
    expect(res.status).toBe(408);
    expect(await res.json()).toEqual({ error: "body_timeout" });
    expect(await (await timed.request("/", { method: "POST", body: "1234" })).json()).toEqual({ bytes: 4 });
  });
});
