import type { IncomingMessage } from "node:http";
import { Hono, type Context } from "hono";
import { createBodyBudget, type BodyReservation } from "./body-budget.js";
import { isJsonMediaType } from "./json-media-type.js";
import { readRawBody } from "./raw-body.js";
import { DEFAULTS } from "../config/defaults.js";
import { isChangeEventType } from "../events/catalog.js";
import { parseEnvelope } from "../events/envelope.js";
import { signatureRefusal, signatureVerifier, type SignatureVerifier } from "../events/signature-schemes.js";
import type { SignatureScheme } from "../config/config.js";
import { ReservedEventTypeError } from "../events/errors.js";
import { BacklogFullError, UnstorableEventError } from "../queue/errors.js";
import type { EventSink } from "../queue/ingest-stream.js";
import type { AppEnv } from "./request-log.js";
import { BodyTimeoutError, PayloadTooLargeError, ServerBusyError, UnsupportedMediaTypeError } from "./errors.js";
import { accountNotFound } from "../mirror/errors.js";

/** Why the edge refused a delivery, for metrics. */
export type RejectReason =
  | "unsupported_media_type"
  | "too_large"
  | "busy"
  | "body_timeout"
  | "invalid_signature"
  | "timestamp_out_of_tolerance"
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
  get(id: string): AccountSigning | undefined;
}

/** How one company signs: its secrets, newest first, under its scheme (`svc` when not given). */
export interface AccountSigning {
  signingSecrets: readonly string[];
  signatureScheme?: SignatureScheme;
  /** The account's registration an event arrives under (docs/accounts.md, "Remove and purge"). */
  incarnation?: string;
}

export interface WebhookRouteOptions {
  sink: EventSink;
  /** The env-configured company's secrets (`default`, at POST /webhooks). */
  signingSecrets: readonly string[];
  /** The env-configured company's scheme (SIGNATURE_SCHEME; `svc` by default). */
  signatureScheme?: SignatureScheme;
  /** Standard Webhooks: how far a delivery's timestamp may be from now (SIGNATURE_TOLERANCE_SECONDS; DEFAULTS' by default). */
  signatureToleranceSeconds?: number;
  /** The time a Standard Webhooks timestamp is checked against, in ms (Date.now by default; tests fix it). */
  clock?: () => number;
  /** The registered accounts, each at POST /webhooks/{id}; without it those routes answer 404. */
  accounts?: AccountSecrets;
  maxBodyBytes: number;
  /** What request bodies may hold in memory while they arrive (docs/edge.md, "What the body budget bounds"); DEFAULTS' where not given. */
  bodyBudget?: {
    /** Body bytes held across all in-flight requests (MAX_BUFFERED_BODY_BYTES). */
    maxBytes?: number;
    /** The most of them one account's path, or one remote address, may hold (BODY_BUDGET_SOURCE_SHARE). */
    sourceShare?: number;
    /** How long a body may take to arrive once its read starts (HTTP_BODY_TIMEOUT_MS). */
    readTimeoutMs?: number;
  };
  observer?: WebhookObserver;
}

const bodyRefusal = (err: unknown): RejectReason | undefined =>
  err instanceof PayloadTooLargeError
    ? "too_large"
    : err instanceof ServerBusyError
      ? "busy"
      : err instanceof BodyTimeoutError
        ? "body_timeout"
        : undefined;
const enqueueRefusal = (err: unknown): RejectReason =>
  err instanceof UnstorableEventError ? "invalid_event" : err instanceof BacklogFullError ? "backlog_full" : "queue_unavailable";

/**
 * POST /webhooks: check the Content-Type and the signature header's shape, read the raw bytes (capped), verify the
 * signature over exactly those bytes, only then parse, then enqueue and answer 200 once Redis has acknowledged the job.
 */
/**
 * The time of receipt, formatted once per millisecond: toISOString costs ~1 µs, ~1.5 % of a
 * request, and every request within one millisecond gets the same string from it anyway.
 */
function receiptStamp(): () => string {
  let stampedAt = -1;
  let stamp = "";
  return () => {
    const now = Date.now();
    if (now !== stampedAt) {
      stampedAt = now;
      stamp = new Date(now).toISOString();
    }
    return stamp;
  };
}

/**
 * Each account's verifier, built once per version of its keys (the directory hands out the same
 * object until the account changes): a Standard Webhooks secret is decoded once, not per delivery.
 */
function accountVerifiers(tolerance: number): (found: AccountSigning) => SignatureVerifier {
  const verifiers = new WeakMap<AccountSigning, SignatureVerifier>();
  return (found) => {
    let verifier = verifiers.get(found);
    if (!verifier) {
      verifier = signatureVerifier(found.signatureScheme ?? "svc", found.signingSecrets, tolerance);
      verifiers.set(found, verifier);
    }
    return verifier;
  };
}

export function webhookRoute(options: WebhookRouteOptions): Hono<AppEnv> {
  const { sink, observer } = options;
  const tolerance = options.signatureToleranceSeconds ?? DEFAULTS.signatureToleranceSeconds;
  const clock = options.clock ?? Date.now;
  const envVerifier = signatureVerifier(options.signatureScheme ?? "svc", options.signingSecrets, tolerance);
  const verifierOf = accountVerifiers(tolerance);
  const maxBytes = options.maxBodyBytes;
  const readTimeoutMs = options.bodyBudget?.readTimeoutMs ?? DEFAULTS.httpBodyTimeoutMs;
  const budget = createBodyBudget({
    maxBytes: options.bodyBudget?.maxBytes ?? DEFAULTS.maxBufferedBodyBytes,
    sourceShare: options.bodyBudget?.sourceShare ?? DEFAULTS.bodyBudgetSourceShare,
    minSourceBytes: maxBytes,
  });
  const route = new Hono<AppEnv>();
  const receivedAt = receiptStamp();

  route.post("/", (c) => receiveCounted(c, envVerifier, undefined));
  // A registered account's endpoint: an unknown account is refused before a byte of the body is read.
  route.post("/:account", (c) => {
    const account = c.req.param("account");
    const found = refusing("accounts_unavailable", () => options.accounts?.get(account));
    if (!found) {
      observer?.rejected?.("unknown_account");
      throw accountNotFound(account);
    }
    return receiveCounted(c, verifierOf(found), account, found.incarnation);
  });

  // `incarnation`: the account's registration the event arrives under (docs/accounts.md, "Remove and purge").
  async function receiveCounted(c: Context<AppEnv>, verifier: SignatureVerifier, account: string | undefined, incarnation?: string) {
    // The bytes stay counted until the answer: the body is held in memory until then. Its sources:
    // the account's path, and the sender's address (none in memory, through app.request()).
    const address = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket.remoteAddress;
    const path = `path:${account ?? ""}`;
    const reservation = budget.open(address ? [path, `addr:${address}`] : [path]);
    try {
      return await receive(c, reservation, verifier, account, incarnation);
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
    verifier: SignatureVerifier,
    account: string | undefined,
    incarnation: string | undefined,
  ) {
    // A body that does not say it is JSON is refused before anything else is read (docs/edge.md).
    if (!isJsonMediaType(c.req.header("content-type"))) {
      observer?.rejected?.("unsupported_media_type");
      throw new UnsupportedMediaTypeError();
    }
    // The headers first: an unsigned or malformed delivery (or a stale one) is refused before a byte
    // of its body is read or hashed (300 unsigned 1 MB posts cost 0.79 s of CPU when they were read first).
    const signature = refusing(signatureRefusal, () => verifier.check((name) => c.req.header(name), Math.floor(clock() / 1000)));
    const raw = await refusing(bodyRefusal, () => readRawBody(c, { maxBytes, reservation, deadlineMs: readTimeoutMs }));
    const { secretIndex, eventId } = refusing("invalid_signature", () => signature(raw));
    const envelope = refusing("invalid_event", () => parseEnvelope(raw, eventId));
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
        incarnation,
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
