import { createHmac, timingSafeEqual } from "node:crypto";

/** The header the upstream signs deliveries with (spec part 6). Hono lower-cases names. */
export const SIGNATURE_HEADER = "x-svc-signature";
const PREFIX = "sha256=";
const HEX_DIGEST = /^[0-9a-fA-F]{64}$/;
const CANONICAL_LENGTH = PREFIX.length + 64;
// Standard or URL-safe base64 of 32 bytes: 43 characters plus one optional "=".
const BASE64_DIGEST = /^[A-Za-z0-9+/_-]{43}=?$/;

export type SignatureFailure = "missing" | "malformed" | "mismatch";

export class WebhookSignatureError extends Error {
  readonly code = "invalid_signature";
  constructor(readonly reason: SignatureFailure) {
    super(
      reason === "missing"
        ? "X-SVC-Signature header is missing"
        : reason === "malformed"
          ? "X-SVC-Signature must be sha256=<hex or base64 digest of 32 bytes>"
          : "X-SVC-Signature does not match the body for any configured secret",
    );
    this.name = "WebhookSignatureError";
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
