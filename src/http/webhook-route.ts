import type { IncomingMessage } from "node:http";
import { Hono, type Context } from "hono";
import { isChangeEventType } from "../events/catalog.js";
import { parseEnvelope, matchSignature, SIGNATURE_HEADER, signatureDigest } from "../events/envelope.js";
import { ReservedEventTypeError } from "../events/errors.js";
import { BacklogFullError, UnstorableEventError } from "../queue/errors.js";
import type { EventSink } from "../queue/ingest-stream.js";
import type { AppEnv } from "./request-log.js";
import { PayloadTooLargeError, RequestAbortedError, ServerBusyError } from "./errors.js";
import { accountNotFound } from "../mirror/errors.js";

/** Why the edge refused a delivery, for metrics. */
export type RejectReason =
  | "too_large"
  | "busy"
  | "invalid_signature"
  | "invalid_event"
  | "reserved_event_type"
  | "queue_unavailable"
  | "backlog_full"
  | "unknown_account"
  | "accounts_unavailable";

/** Hooks for metrics; the edge works the same without them. */
export interface WebhookObserver {
  accepted?(info: { type: string; secretIndex: number; duplicate: boolean; enqueueMs: number }): void;
  rejected?(reason: RejectReason): void;
}

/** The registered accounts as the edge reads them (mirror/accounts.ts's directory): unknown → undefined. */
export interface AccountSecrets {
  get(id: string): { signingSecrets: readonly string[]; incarnation?: string } | undefined;
}

export interface WebhookRouteOptions {
  sink: EventSink;
  /** The env-configured company's secrets (`default`, at POST /webhooks). */
  signingSecrets: readonly string[];
  /** The registered accounts, each at POST /webhooks/{id}; without it those routes answer 404. */
  accounts?: AccountSecrets;
  maxBodyBytes: number;
  /** Body bytes buffered across all in-flight requests (default: 32 × maxBodyBytes). */
  maxBufferedBodyBytes?: number;
  observer?: WebhookObserver;
}

const bodyRefusal = (err: unknown): RejectReason | undefined =>
  err instanceof PayloadTooLargeError ? "too_large" : err instanceof ServerBusyError ? "busy" : undefined;
const enqueueRefusal = (err: unknown): RejectReason =>
  err instanceof UnstorableEventError ? "invalid_event" : err instanceof BacklogFullError ? "backlog_full" : "queue_unavailable";

/**
 * POST /webhooks: check the signature header's shape, read the raw bytes (capped), verify the
 * signature over exactly those bytes, only then parse, then enqueue and answer 200 once Redis has acknowledged the job.
 */
export function webhookRoute(options: WebhookRouteOptions): Hono<AppEnv> {
  const { sink, signingSecrets, observer } = options;
  const maxBytes = options.maxBodyBytes;
  const budget = createBodyBudget(options.maxBufferedBodyBytes ?? 32 * maxBytes);
  const route = new Hono<AppEnv>();
  // The time of receipt, formatted once per millisecond: toISOString costs ~1 µs, ~1.5 % of a
  // request, and every request within one millisecond gets the same string from it anyway.
  let stampedAt = -1;
  let stamp = "";
  const receivedAt = () => {
    const now = Date.now();
    if (now !== stampedAt) {
      stampedAt = now;
      stamp = new Date(now).toISOString();
    }
    return stamp;
  };

  route.post("/", (c) => receiveCounted(c, signingSecrets, undefined));
  // A registered account's endpoint: an unknown account is refused before a byte of the body is read.
  route.post("/:account", (c) => {
    const account = c.req.param("account");
    const found = refusing("accounts_unavailable", () => options.accounts?.get(account));
    if (!found) {
      observer?.rejected?.("unknown_account");
      throw accountNotFound(account);
    }
    return receiveCounted(c, found.signingSecrets, account, found.incarnation);
  });

  // `incarnation`: the account's registration the event arrives under (docs/accounts.md, "Remove and purge").
  async function receiveCounted(c: Context<AppEnv>, secrets: readonly string[], account: string | undefined, incarnation?: string) {
    // The bytes stay counted until the answer: the body is held in memory until then.
    const reservation = budget.open();
    try {
      return await receive(c, reservation, secrets, account, incarnation);
    } finally {
      reservation.close();
    }
  }

  // Runs one step of the delivery (sync, or a promise): a step that throws or rejects is counted
  // under `reason` (or the reason it gives the error, if any) and rethrown.
  function refusing<T>(reason: RejectReason | ((err: unknown) => RejectReason | undefined), run: () => T): T {
    const refuse = (err: unknown): never => {
      const why = typeof reason === "function" ? reason(err) : reason;
      if (why) observer?.rejected?.(why);
      throw err;
    };
    try {
      const out = run();
      return out instanceof Promise ? (out.catch(refuse) as T) : out;
    } catch (err) {
      return refuse(err);
    }
  }

  async function receive(
    c: Context<AppEnv>,
    reservation: BodyReservation,
    secrets: readonly string[],
    account: string | undefined,
    incarnation: string | undefined,
  ) {
    // The header first: an unsigned or malformed delivery is refused before a byte of its body
    // is read or hashed (300 unsigned 1 MB posts cost 0.79 s of CPU when they were read first).
    const digest = refusing("invalid_signature", () => signatureDigest(c.req.header(SIGNATURE_HEADER)));
    const raw = await refusing(bodyRefusal, () => readRawBody(c, maxBytes, reservation));
    const secretIndex = refusing("invalid_signature", () => matchSignature(raw, digest, secrets));
    const envelope = refusing("invalid_event", () => parseEnvelope(raw));
    // Change events come from the mirror only: a sender must not be able to forge one.
    if (isChangeEventType(envelope.type)) {
      observer?.rejected?.("reserved_event_type");
      throw new ReservedEventTypeError(envelope.type);
    }
    c.set("eventId", envelope.id);
    c.set("eventType", envelope.type);
    const start = performance.now();
    const result = await refusing(enqueueRefusal, () =>
      sink.enqueue({
        id: envelope.id,
        type: envelope.type,
        receivedAt: receivedAt(),
        payload: envelope.payload,
        payloadJson: envelope.text,
        account,
        ...(incarnation === undefined ? {} : { incarnation }),
      }),
    );
    c.set("duplicate", result.duplicate);
    observer?.accepted?.({
      type: envelope.type,
      secretIndex,
      duplicate: result.duplicate,
      enqueueMs: performance.now() - start,
    });
    return c.json({ received: true, id: envelope.id, duplicate: result.duplicate }, 200);
  }
  return route;
}

// A request's body: a budget of bytes buffered across all requests, and the read of one body
// counted against it and capped by MAX_BODY_BYTES.

/** One request's share of the budget: take as bytes arrive, close once the request is done. */
export interface BodyReservation {
  /** Counts `bytes` against the budget; throws ServerBusyError (counting nothing) when over it. */
  take(bytes: number): void;
  /** Gives back everything taken; idempotent. */
  close(): void;
}

/**
 * A cap on request-body bytes held in memory across all in-flight requests, so many slow or
 * large uploads at once cannot exhaust memory (each is already capped by MAX_BODY_BYTES).
 *
 * @example const r = budget.open(); try { await readRawBody(c, max, r) } finally { r.close() }
 */
export function createBodyBudget(maxBytes: number) {
  let inUse = 0;
  return {
    /** Bytes held by open reservations. */
    get inUse() {
      return inUse;
    },
    open(): BodyReservation {
      let held = 0;
      return {
        take(bytes) {
          if (inUse + bytes > maxBytes) throw new ServerBusyError(maxBytes);
          inUse += bytes;
          held += bytes;
        },
        close() {
          inUse -= held;
          held = 0;
        },
      };
    },
  };
}

// Without a shared budget nothing is counted.
const NO_RESERVATION: BodyReservation = { take: () => undefined, close: () => undefined };

/**
 * The request body as raw bytes, at most `maxBytes`, counted against `reservation` (a share of
 * the budget across all requests) as they are accepted. With Content-Length the size is known
 * before reading and the bytes come straight from the Node request (hono's bodyLimit would build
 * a web Request and stream per request, about a third of the throughput). Without it (chunked),
 * bytes are counted as they arrive and reading stops at the cap.
 */
export async function readRawBody(c: Context, maxBytes: number, reservation = NO_RESERVATION): Promise<Uint8Array> {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  try {
    return await readCapped(c, incoming, maxBytes, reservation);
  } catch (err) {
    // Our own refusals pass; anything else while the body is incomplete is the socket closing
    // mid-body (Node rejects the read with "aborted", ECONNRESET).
    if (err instanceof PayloadTooLargeError || err instanceof ServerBusyError) throw err;
    if (incoming && !incoming.complete) throw new RequestAbortedError({ cause: err });
    throw err;
  }
}

async function readCapped(
  c: Context,
  incoming: IncomingMessage | undefined,
  maxBytes: number,
  reservation: BodyReservation,
): Promise<Uint8Array> {
  const declared = c.req.header("content-length");
  if (declared !== undefined) {
    const length = Number(declared);
    if (!Number.isSafeInteger(length) || length < 0 || length > maxBytes) throw new PayloadTooLargeError(maxBytes);
    reservation.take(length);
    // Node's parser hands over exactly Content-Length bytes. Read from the Node request itself:
    // the adapter's arrayBuffer() copies them into a new ArrayBuffer per request (~2 % of the edge's CPU).
    return incoming ? readDeclared(incoming) : new Uint8Array(await c.req.arrayBuffer());
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  const take = (chunk: Uint8Array) => {
    size += chunk.byteLength;
    if (size > maxBytes) throw new PayloadTooLargeError(maxBytes);
    reservation.take(chunk.byteLength);
    chunks.push(chunk);
  };
  // The Node request, else in memory (app.request() in tests, other runtimes) the web stream.
  // Node's types leave a web stream's chunk type open (`any`); a Request body stream yields
  // Uint8Array by the Fetch spec. A refusal leaves the loop, which cancels either stream.
  const source = incoming ?? c.req.raw.body;
  if (source) for await (const chunk of source as AsyncIterable<Uint8Array>) take(chunk);
  return Buffer.concat(chunks, size);
}

/** A Node request's whole body (its length already checked), one chunk as is, several joined. */
function readDeclared(incoming: IncomingMessage): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const settle = (err?: Error) => {
      incoming.off("data", onData).off("end", onEnd).off("error", settle).off("close", onClose);
      const [first, ...rest] = chunks;
      if (err) reject(err);
      else resolve(first && rest.length === 0 ? first : Buffer.concat(chunks));
    };
    const onData = (chunk: Buffer) => void chunks.push(chunk);
    const onEnd = () => settle();
    // Closed before "end": the client went away mid-body (readRawBody turns it into RequestAbortedError).
    const onClose = () => settle(new Error("the request closed before its body ended"));
    incoming.on("data", onData).on("end", onEnd).on("error", settle).on("close", onClose);
  });
}
