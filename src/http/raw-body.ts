import type { IncomingMessage } from "node:http";
import type { Context } from "hono";

export class PayloadTooLargeError extends Error {
  readonly code = "payload_too_large";
  constructor(readonly maxBytes: number) {
    super(`body exceeds ${maxBytes} bytes`);
    this.name = "PayloadTooLargeError";
  }
}

/**
 * The request body as raw bytes, at most `maxBytes`. With Content-Length the size is known
 * before reading and the bytes come straight from the Node request (hono's bodyLimit would build
 * a web Request and stream per request, about a third of the throughput). Without it (chunked),
 * bytes are counted as they arrive and reading stops at the cap.
 */
export async function readRawBody(c: Context, maxBytes: number): Promise<Uint8Array> {
  const declared = c.req.header("content-length");
  if (declared !== undefined) {
    const length = Number(declared);
    if (!Number.isSafeInteger(length) || length < 0 || length > maxBytes) throw new PayloadTooLargeError(maxBytes);
    return new Uint8Array(await c.req.arrayBuffer());
  }
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  const chunks: Uint8Array[] = [];
  let size = 0;
  const take = (chunk: Uint8Array) => {
    size += chunk.byteLength;
    if (size > maxBytes) throw new PayloadTooLargeError(maxBytes);
    chunks.push(chunk);
  };
  if (incoming) {
    for await (const chunk of incoming) take(chunk as Buffer);
  } else if (c.req.raw.body) {
    // In memory (app.request() in tests, other runtimes): the web stream.
    const reader = c.req.raw.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      try {
        take(value);
      } catch (err) {
        await reader.cancel();
        throw err;
      }
    }
  }
  return Buffer.concat(chunks, size);
}
