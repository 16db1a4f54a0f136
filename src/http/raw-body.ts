import type { IncomingMessage } from "node:http";
import type { Context } from "hono";
import { NO_RESERVATION, type BodyReservation } from "./body-budget.js";
import { BodyTimeoutError, PayloadTooLargeError, RequestAbortedError, ServerBusyError } from "./errors.js";

// A request's raw body: capped by MAX_BODY_BYTES, each chunk counted against the body budget as
// it arrives, and read within a deadline.

export interface ReadRawBodyOptions {
  /** Largest body accepted (MAX_BODY_BYTES): 413 beyond it, before reading when Content-Length says so. */
  maxBytes: number;
  /** This request's share of the body budget (body-budget.ts); counts nothing when absent. */
  reservation?: BodyReservation;
  /** How long the body may take to arrive from when its read starts (HTTP_BODY_TIMEOUT_MS); none when absent. */
  deadlineMs?: number;
}

/**
 * The request body as raw bytes, at most `maxBytes`, each chunk counted against `reservation`
 * (a share of the budget across all requests) as it arrives, never as declared: a sender that
 * declares a megabyte and sends nothing holds nothing. The bytes come straight from the Node
 * request (hono's bodyLimit would build a web Request and stream per request, about a third of
 * the throughput); in memory (app.request() in tests, other runtimes) from the web stream.
 * Throws PayloadTooLargeError, ServerBusyError, BodyTimeoutError past `deadlineMs`, or
 * RequestAbortedError when the client goes away mid-body.
 */
export async function readRawBody(c: Context, options: ReadRawBodyOptions): Promise<Uint8Array> {
  const { maxBytes } = options;
  const declared = c.req.header("content-length");
  if (declared !== undefined) {
    const length = Number(declared);
    if (!Number.isSafeInteger(length) || length < 0 || length > maxBytes) throw new PayloadTooLargeError(maxBytes);
  }
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  const body = createBodyCollector(options);
  if (incoming) return readIncoming(incoming, body, options.deadlineMs);
  const stream = c.req.raw.body;
  return stream ? readWebStream(stream, body, options.deadlineMs) : new Uint8Array(0);
}

/** The chunks of one body, capped and counted against the budget as they arrive. */
function createBodyCollector({ maxBytes, reservation = NO_RESERVATION }: ReadRawBodyOptions) {
  const chunks: Uint8Array[] = [];
  let size = 0;
  return {
    /** Throws PayloadTooLargeError past the cap, ServerBusyError past the budget. */
    add(chunk: Uint8Array) {
      if (size + chunk.byteLength > maxBytes) throw new PayloadTooLargeError(maxBytes);
      reservation.take(chunk.byteLength);
      size += chunk.byteLength;
      chunks.push(chunk);
    },
    /** The body: one chunk as is, several joined. */
    bytes(): Uint8Array {
      const [first, ...rest] = chunks;
      if (!first) return new Uint8Array(0);
      return rest.length === 0 ? first : Buffer.concat(chunks, size);
    },
  };
}

type BodyCollector = ReturnType<typeof createBodyCollector>;

const isOurRefusal = (err: unknown) =>
  err instanceof PayloadTooLargeError || err instanceof ServerBusyError || err instanceof BodyTimeoutError;

/**
 * A Node request's body, by its events. Node's parser hands over exactly Content-Length bytes;
 * reading from the Node request itself avoids the adapter's copy into a new ArrayBuffer per
 * request (~2 % of the edge's CPU). What is left unread after a refusal, the adapter drains.
 */
function readIncoming(incoming: IncomingMessage, body: BodyCollector, deadlineMs: number | undefined): Promise<Uint8Array> {
  // Already read to its end (nothing more will come): what was collected is the body.
  if (incoming.readableEnded) return Promise.resolve(body.bytes());
  return new Promise((resolve, reject) => {
    const timer = deadlineMs === undefined ? undefined : setTimeout(() => settle(new BodyTimeoutError(deadlineMs)), deadlineMs);
    const settle = (err?: Error) => {
      clearTimeout(timer);
      incoming.off("data", onData).off("end", onEnd).off("error", onError).off("close", onClose);
      if (err === undefined) resolve(body.bytes());
      // Anything else while the body is incomplete is the socket closing mid-body ("aborted", ECONNRESET).
      else reject(isOurRefusal(err) || incoming.complete ? err : new RequestAbortedError({ cause: err }));
    };
    const onData = (chunk: Buffer) => {
      try {
        body.add(chunk);
      } catch (err) {
        settle(err as Error);
      }
    };
    const onEnd = () => settle();
    const onError = (err: Error) => settle(err);
    // Closed before "end": the client went away mid-body.
    const onClose = () => settle(new Error("the request closed before its body ended"));
    incoming.on("data", onData).on("end", onEnd).on("error", onError).on("close", onClose);
  });
}

/** A web stream's body (a Request body yields Uint8Array by the Fetch spec); a refusal cancels the stream. */
async function readWebStream(stream: ReadableStream<Uint8Array>, body: BodyCollector, deadlineMs: number | undefined): Promise<Uint8Array> {
  const reader = stream.getReader();
  let timer: NodeJS.Timeout | undefined;
  const deadline =
    deadlineMs === undefined
      ? undefined
      : new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new BodyTimeoutError(deadlineMs)), deadlineMs)));
  try {
    for (;;) {
      const next = await (deadline ? Promise.race([reader.read(), deadline]) : reader.read());
      if (next.done) return body.bytes();
      body.add(next.value);
    }
  } catch (err) {
    void reader.cancel().catch(() => undefined);
    throw err;
  } finally {
    clearTimeout(timer);
  }
}
