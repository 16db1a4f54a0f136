// Standard Webhooks (https://www.standardwebhooks.com, spec v1.0.0): the signing scheme Svix and
// many senders use. One home for the scheme, both ways: the edge verifies deliveries signed so,
// the alerts sign their notifications so, and the sandbox and `trigger` sign test deliveries so.
import { createHmac, timingSafeEqual } from "node:crypto";
import { codedError } from "../errors.js";

/** The scheme's three headers, as Hono reads them (lower case). */
export const STANDARD_WEBHOOK_HEADERS = {
  id: "webhook-id",
  timestamp: "webhook-timestamp",
  signature: "webhook-signature",
} as const;

/** How far a delivery's timestamp may be from now, either way, by default (the scheme's own 5 minutes). */
export const DEFAULT_TOLERANCE_SECONDS = 300;

const SECRET_PREFIX = "whsec_";
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
// The scheme asks for 24 to 64 random bytes; fewer than 16 is no secret at all.
const MIN_SECRET_BYTES = 16;
const MAX_SECRET_BYTES = 64;
const TIMESTAMP = /^\d{1,12}$/;
const SIGNATURE_VERSION = "v1";
// Standard base64 of 32 bytes: 43 characters and one "=".
const V1_SIGNATURE = /^[A-Za-z0-9+/]{43}=$/;

/** Why a `whsec_` secret cannot be used, or undefined when it can. */
export function standardSecretProblem(secret: string): string | undefined {
  if (!secret.startsWith(SECRET_PREFIX)) return `a Standard Webhooks secret starts with ${SECRET_PREFIX}`;
  const body = secret.slice(SECRET_PREFIX.length);
  if (!BASE64.test(body) || body.length % 4 !== 0) return `a Standard Webhooks secret is ${SECRET_PREFIX} and base64`;
  const bytes = Buffer.from(body, "base64").length;
  if (bytes < MIN_SECRET_BYTES || bytes > MAX_SECRET_BYTES) {
    return `a Standard Webhooks secret holds ${MIN_SECRET_BYTES} to ${MAX_SECRET_BYTES} bytes (this one ${bytes})`;
  }
  return undefined;
}

/** The HMAC key a `whsec_` secret stands for; throws on a secret standardSecretProblem refuses. */
export function standardSecretKey(secret: string): Buffer {
  const problem = standardSecretProblem(secret);
  if (problem) throw new TypeError(problem);
  return Buffer.from(secret.slice(SECRET_PREFIX.length), "base64");
}

function digest(key: Buffer, id: string, timestamp: number | string, body: string | Uint8Array): Buffer {
  return createHmac("sha256", key).update(`${id}.${timestamp}.`).update(body).digest();
}

/** The `webhook-signature` value for one message: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`. */
export function signStandardWebhook(key: Buffer, id: string, timestamp: number, body: string | Uint8Array): string {
  return `${SIGNATURE_VERSION},${digest(key, id, timestamp, body).toString("base64")}`;
}

/** The three headers of one message, signed with each key (several during a rotation). */
export function standardWebhookHeaders(
  keys: readonly Buffer[],
  id: string,
  timestamp: number,
  body: string | Uint8Array,
): Record<(typeof STANDARD_WEBHOOK_HEADERS)[keyof typeof STANDARD_WEBHOOK_HEADERS], string> {
  return {
    [STANDARD_WEBHOOK_HEADERS.id]: id,
    [STANDARD_WEBHOOK_HEADERS.timestamp]: String(timestamp),
    [STANDARD_WEBHOOK_HEADERS.signature]: keys.map((key) => signStandardWebhook(key, id, timestamp, body)).join(" "),
  };
}

export type StandardWebhookFailure = "missing" | "malformed" | "too_old" | "too_new" | "mismatch";

const FAILURE_MESSAGES: Record<StandardWebhookFailure, string> = {
  missing: "webhook-id, webhook-timestamp and webhook-signature are all required",
  malformed: "webhook-timestamp must be unix seconds and webhook-signature space-separated v1,<base64 of 32 bytes>",
  too_old: "webhook-timestamp is older than the tolerance allows",
  too_new: "webhook-timestamp is further in the future than the tolerance allows",
  mismatch: "webhook-signature does not match the message for any configured secret",
};

export class StandardWebhookError extends codedError("invalid_signature", { status: 401 }) {
  constructor(readonly reason: StandardWebhookFailure) {
    super(FAILURE_MESSAGES[reason]);
  }
}

/** A message's headers, checked for their shape before its body is read. */
export interface StandardWebhookHeaders {
  id: string;
  timestamp: number;
  /** The v1 signatures the header lists, decoded; other versions are skipped. */
  signatures: readonly Buffer[];
}

/**
 * Reads and checks the three headers (their shape and the timestamp's distance from `nowSeconds`),
 * before a byte of the body is read: what fails here costs no hashing. Throws StandardWebhookError.
 */
export function readStandardWebhookHeaders(
  header: (name: string) => string | undefined,
  nowSeconds: number,
  toleranceSeconds = DEFAULT_TOLERANCE_SECONDS,
): StandardWebhookHeaders {
  const id = header(STANDARD_WEBHOOK_HEADERS.id);
  const stamp = header(STANDARD_WEBHOOK_HEADERS.timestamp);
  const list = header(STANDARD_WEBHOOK_HEADERS.signature);
  if (!id || !stamp || !list) throw new StandardWebhookError("missing");
  const trimmed = stamp.trim();
  if (!TIMESTAMP.test(trimmed)) throw new StandardWebhookError("malformed");
  const timestamp = Number(trimmed);
  if (timestamp < nowSeconds - toleranceSeconds) throw new StandardWebhookError("too_old");
  if (timestamp > nowSeconds + toleranceSeconds) throw new StandardWebhookError("too_new");
  const signatures: Buffer[] = [];
  for (const entry of list.split(" ")) {
    const comma = entry.indexOf(",");
    if (comma < 0 || entry.slice(0, comma) !== SIGNATURE_VERSION) continue;
    const value = entry.slice(comma + 1);
    if (V1_SIGNATURE.test(value)) signatures.push(Buffer.from(value, "base64"));
  }
  if (signatures.length === 0) throw new StandardWebhookError("malformed");
  return { id, timestamp, signatures };
}

/**
 * Compares each listed signature with the HMAC of `id.timestamp.body` under each key, in constant
 * time per comparison; returns the index of the key that matched (for rotation metrics).
 */
export function matchStandardWebhook(headers: StandardWebhookHeaders, body: Uint8Array, keys: readonly Buffer[]): number {
  for (const [i, key] of keys.entries()) {
    const expected = digest(key, headers.id, headers.timestamp, body);
    for (const signature of headers.signatures) if (timingSafeEqual(expected, signature)) return i;
  }
  throw new StandardWebhookError("mismatch");
}
