import { describe, expect, it } from "vitest";
import { errorFromResponse, UpstreamServerError } from "../../src/upstream/errors.js";
import { readBodyUpTo } from "../../src/upstream/client.js";

/** A streamed body (no Content-Length) of `chunks` chunks of `size` bytes, counting how many were pulled. */
function streamed(chunks: number, size: number) {
  const pulled = { chunks: 0 };
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulled.chunks === chunks) {
        controller.close();
        return;
      }
      pulled.chunks++;
      controller.enqueue(new Uint8Array(size).fill(0x61));
    },
  });
  return { res: new Response(body), pulled };
}

describe("readBodyUpTo", () => {
  it("stops pulling a body once past the cap and says it was cut", async () => {
    const { res, pulled } = streamed(1000, 1024);
    const { text, cut } = await readBodyUpTo(res, 4096);
    expect(cut).toBe(true);
    expect(text).toBe("a".repeat(4096));
    // The stream was cancelled a chunk or so past the cap, not read to its 1,000th chunk.
    expect(pulled.chunks).toBeLessThan(10);
  });

  it("reads a body under the cap whole", async () => {
    expect(await readBodyUpTo(streamed(3, 1000).res, 4096)).toEqual({ text: "a".repeat(3000), cut: false });
  });

  it("refuses at once a body whose Content-Length is over the cap", async () => {
    const res = new Response("x".repeat(5000), { headers: { "content-length": "5000" } });
    expect(await readBodyUpTo(res, 4096)).toEqual({ text: "", cut: true });
  });
});

describe("errorFromResponse of a cut body", () => {
  it("keeps the code and the message as far as it was read, and says where it was cut", () => {
    const err = errorFromResponse({
      status: 503,
      body: '{"error":{"code":"overloaded","message":"the kitchen is on fire and the',
      cutAtBytes: 4096,
      retryAfterMs: 0,
      context: "GET /r",
    });
    expect(err).toBeInstanceOf(UpstreamServerError);
    expect(err).toMatchObject({ code: "overloaded", message: "GET /r answered 503: the kitchen is on fire and the… (cut at 4096 bytes)" });
  });

  it("gives a cut body of another shape the generic code, and still says it was cut", () => {
    const err = errorFromResponse({ status: 502, body: "<html><body>Bad gateway", cutAtBytes: 4096, retryAfterMs: 0, context: "GET /r" });
    expect(err).toMatchObject({ code: "http_502", message: "GET /r answered 502… (cut at 4096 bytes)" });
  });
});
