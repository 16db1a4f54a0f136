import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { idProblem, MAX_ID_LENGTH, textProblem } from "../base/text.js";
import { codedError, NamedError, type HttpAnswer } from "../errors.js";
import { checkKeepable } from "./keepable-payload.js";

/**
 * The envelope we assume (spec part 6 does not show one): `{ id, type, createdAt, data }`, of
 * which only `type` is required. Everything else the sender put in the body is kept.
 */
export interface EventEnvelope {
  /** `id` from the body, else the SHA-256 (hex) of the raw body. */
  id: string;
  type: string;
  /** The whole parsed body, unknown fields included. */
  payload: Record<string, unknown>;
  /** The body as text (valid JSON of `payload`): stored as is, so the edge need not re-serialize it. */
  text: string;
}

export class EnvelopeError extends codedError("invalid_event", { status: 400 }) {}

/** A valid JSON body nested deeper than this cannot be stored (BullMQ's JSON.stringify overflows
 * its stack a few thousand levels down) and no real event comes near it. */
export const MAX_JSON_DEPTH = 256;

/** Nested deeper than MAX_JSON_DEPTH: refused at once (400), never retried into the queue. */
export class PayloadTooDeepError extends codedError("payload_too_deep", { status: 400 }) {
  constructor(readonly maxDepth: number) {
    super(`body nests objects and arrays deeper than ${maxDepth} levels`);
  }
}

/** Longest event `id` or `type` accepted: the id rule's (mirror/values.ts), far above any real one. */
export const MAX_IDENTIFIER_LENGTH = MAX_ID_LENGTH;

/**
 * An `id` or `type` that breaks the id rule (mirror/values.ts `idProblem`, `textProblem` for a
 * type): longer than MAX_IDENTIFIER_LENGTH, a control character (C0, DEL, C1), a lone UTF-16
 * surrogate, or an id "." or "..". Such an event could be neither deduplicated,
 * routed nor recorded (PostgreSQL refuses \u0000 and lone surrogates), so it is refused at once
 * (400) rather than answered 200 and then lost. The message names the rule, never the value.
 */
export class EventIdentifierError extends NamedError {
  readonly code: "invalid_event_id" | "invalid_event_type";
  readonly http: HttpAnswer = { status: 400 };
  constructor(readonly field: "id" | "type") {
    super(
      `"${field}" must be at most ${MAX_IDENTIFIER_LENGTH} characters, with no control characters or unpaired surrogates` +
        (field === "id" ? ', and not "." or ".."' : ""),
    );
    this.code = field === "id" ? "invalid_event_id" : "invalid_event_type";
  }
}

const decoder = new TextDecoder("utf-8", { fatal: true });
const NOT_JSON = "body is not valid UTF-8 JSON";
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/** Whether JSON text holds more than `limit` opening brackets anywhere, strings included: an upper
 * bound on its nesting, found with the native indexOf (~0.1 µs for a 1 KB event, a tenth of the
 * exact scan below), so only a body with that many brackets pays for the exact scan. */
function opensMoreThan(text: string, limit: number): boolean {
  let count = 0;
  for (let i = text.indexOf("{"); i !== -1; i = text.indexOf("{", i + 1)) if (++count > limit) return true;
  for (let i = text.indexOf("["); i !== -1; i = text.indexOf("[", i + 1)) if (++count > limit) return true;
  return false;
}

/** Whether raw JSON bytes open more than `limit` nested containers (strings skipped): one pass,
 * no recursion, before JSON.parse builds the structure. An indexed loop of plain comparisons: it
 * runs over every byte it is given, so no Set lookups or iterator here. */
function nestsDeeperThan(raw: Uint8Array, limit: number): boolean {
  let depth = 0;
  const n = raw.length;
  for (let i = 0; i < n; i++) {
    const byte = raw[i];
    if (byte === QUOTE) {
      // Skip the string: to the next quote not escaped by a backslash.
      for (i++; i < n; i++) {
        const c = raw[i];
        if (c === BACKSLASH) i++;
        else if (c === QUOTE) break;
      }
    } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      if (++depth > limit) return true;
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) depth--;
  }
  return false;
}

/**
 * Parses verified body bytes into an envelope, its id `eventId` when the signature carried one
 * (else the body's `id`, else the body's SHA-256); throws PayloadTooDeepError past MAX_JSON_DEPTH,
 * UnkeepablePayloadError for a value its parsed form would change (keepable-payload.ts),
 * EventIdentifierError for an id or type that cannot be one, EnvelopeError on anything else.
 * Strings elsewhere in the body may hold anything JSON can (\u0000, lone surrogates): the event
 * log stores such a payload in an escaped form (mirror/values.ts).
 */
export function parseEnvelope(raw: Uint8Array, eventId?: string): EventEnvelope {
  let text: string;
  try {
    text = decoder.decode(raw);
  } catch {
    throw new EnvelopeError(NOT_JSON);
  }
  if (opensMoreThan(text, MAX_JSON_DEPTH) && nestsDeeperThan(raw, MAX_JSON_DEPTH)) throw new PayloadTooDeepError(MAX_JSON_DEPTH);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new EnvelopeError(NOT_JSON);
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw new EnvelopeError("body must be a JSON object");
  checkKeepable(text, body);
  const payload = body as Record<string, unknown>;
  if (typeof payload.type !== "string" || payload.type.length === 0) throw new EnvelopeError('body must have a non-empty string "type"');
  // An id from the signed headers (Standard Webhooks' webhook-id) is the event's: the body's own
  // `id`, if any, is then payload like any other field.
  if (eventId === undefined && payload.id !== undefined && (typeof payload.id !== "string" || payload.id.length === 0))
    throw new EnvelopeError('"id", when present, must be a non-empty string');
  if (textProblem(payload.type)) throw new EventIdentifierError("type");
  if (eventId !== undefined) {
    if (idProblem(eventId)) throw new EventIdentifierError("id");
    return { id: eventId, type: payload.type, payload, text };
  }
  const bodyId = payload.id as string | undefined;
  if (bodyId !== undefined && idProblem(bodyId)) throw new EventIdentifierError("id");
  const id = bodyId ?? createHash("sha256").update(raw).digest("hex");
  return { id, type: payload.type, payload, text };
}

/** The header the upstream signs deliveries with (spec part 6). Hono lower-cases names. */
export const SIGNATURE_HEADER = "x-svc-signature";
const PREFIX = "sha256=";
const HEX_DIGEST = /^[0-9a-fA-F]{64}$/;
const CANONICAL_LENGTH = PREFIX.length + 64;
// Standard or URL-safe base64 of 32 bytes: 43 characters plus one optional "=".
const BASE64_DIGEST = /^[A-Za-z0-9+/_-]{43}=?$/;

export type SignatureFailure = "missing" | "malformed" | "mismatch";

export class WebhookSignatureError extends codedError("invalid_signature", { status: 401 }) {
  constructor(readonly reason: SignatureFailure) {
    super(
      reason === "missing"
        ? "X-SVC-Signature header is missing"
        : reason === "malformed"
          ? "X-SVC-Signature must be sha256=<hex or base64 digest of 32 bytes>"
          : "X-SVC-Signature does not match the body for any configured secret",
    );
  }
}

/** The header value the upstream sends for `body`: `sha256=<lower-case hex>`. */
export function signPayload(body: string | Uint8Array, secret: string): string {
  return PREFIX + createHmac("sha256", secret).update(body).digest("hex");
}

/** Decodes the digest of a `sha256=…` header, hex or base64; undefined when malformed. */
export function parseSignatureHeader(header: string): Buffer | undefined {
  // The form the upstream sends, `sha256=` and 64 hex digits, decoded at once (hex decoding stops
  // at the first non-hex digit, so 32 bytes out means all 64 were hex); anything else below.
  if (header.length === CANONICAL_LENGTH && header.startsWith(PREFIX)) {
    const digest = Buffer.from(header.slice(PREFIX.length), "hex");
    if (digest.length === 32) return digest;
  }
  const value = header.trim();
  if (value.length <= PREFIX.length || value.slice(0, PREFIX.length).toLowerCase() !== PREFIX) return undefined;
  const digest = value.slice(PREFIX.length);
  if (HEX_DIGEST.test(digest)) return Buffer.from(digest, "hex");
  if (BASE64_DIGEST.test(digest)) {
    const bytes = Buffer.from(digest.replace(/-/g, "+").replace(/_/g, "/"), "base64");
    return bytes.length === 32 ? bytes : undefined;
  }
  return undefined;
}

/**
 * The digest a delivery's `header` carries, checked before its body is read: a missing or
 * malformed header is refused (WebhookSignatureError) without reading or hashing a byte.
 */
export function signatureDigest(header: string | undefined): Buffer {
  if (header === undefined || header.trim() === "") throw new WebhookSignatureError("missing");
  const digest = parseSignatureHeader(header);
  if (!digest) throw new WebhookSignatureError("malformed");
  return digest;
}

/**
 * Compares the HMAC of the exact `body` bytes with `digest` (from signatureDigest) for each secret
 * in turn, in constant time per comparison. Returns the index of the secret that matched (for
 * rotation metrics).
 */
export function matchSignature(body: Uint8Array, digest: Buffer, secrets: readonly string[]): number {
  for (const [i, secret] of secrets.entries()) {
    const actual = createHmac("sha256", secret).update(body).digest();
    if (timingSafeEqual(actual, digest)) return i;
  }
  throw new WebhookSignatureError("mismatch");
}

/** Verifies `header` against the exact `body` bytes: signatureDigest, then matchSignature. */
export function verifySignature(body: Uint8Array, header: string | undefined, secrets: readonly string[]): number {
  return matchSignature(body, signatureDigest(header), secrets);
}
