import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { PayloadTooLargeError } from "../../src/http/errors.js";
import { readRawBody } from "../../src/http/webhook-route.js";

// In memory (app.request) there is no Node request: the web-stream path counts the bytes.
const app = new Hono();
app.post("/", async (c) => {
  try {
    return c.json({ bytes: (await readRawBody(c, 10)).byteLength });
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
