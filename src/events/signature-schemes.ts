import {
  matchStandardWebhook,
  readStandardWebhookHeaders,
  standardSecretKey,
  StandardWebhookError,
  standardWebhookHeaders,
} from "../base/standard-webhooks.js";
import type { SignatureScheme } from "../config/config.js";
import { matchSignature, SIGNATURE_HEADER, signatureDigest, signPayload } from "./envelope.js";

// How a delivery's signature is checked, by the scheme its sender signs with: one verifier per
// company (the env company, each account), built once from its secrets. The schemes' own rules
// live in events/envelope.ts (svc) and base/standard-webhooks.ts (Standard Webhooks).

/** What a delivery's signature proved: which secret matched, and the event id the scheme carries, if any. */
export interface SignatureMatch {
  secretIndex: number;
  /** Standard Webhooks' `webhook-id`: the event's id for deduplication, whatever the body says. */
  eventId?: string;
}

/** A delivery's headers, checked; matches the body bytes once they are read. */
export type PendingSignature = (body: Uint8Array) => SignatureMatch;

export interface SignatureVerifier {
  readonly scheme: SignatureScheme;
  /**
   * Checks the scheme's headers before a byte of the body is read: missing, malformed, or (Standard
   * Webhooks) a timestamp out of tolerance throws at once. The result matches the body.
   */
  check(header: (name: string) => string | undefined, nowSeconds: number): PendingSignature;
}

/** Why a signature was refused, for metrics: a stale or future timestamp apart from a bad signature. */
export function signatureRefusal(err: unknown): "invalid_signature" | "timestamp_out_of_tolerance" {
  return err instanceof StandardWebhookError && (err.reason === "too_old" || err.reason === "too_new")
    ? "timestamp_out_of_tolerance"
    : "invalid_signature";
}

/**
 * The verifier for one company: `secrets` are its scheme's (newest first during a rotation; a
 * Standard Webhooks secret is `whsec_` and base64, checked when it was configured).
 */
export function signatureVerifier(scheme: SignatureScheme, secrets: readonly string[], toleranceSeconds: number): SignatureVerifier {
  if (scheme === "svc")
    return {
      scheme,
      check(header) {
        const digest = signatureDigest(header(SIGNATURE_HEADER));
        return (body) => ({ secretIndex: matchSignature(body, digest, secrets) });
      },
    };
  const keys = secrets.map(standardSecretKey);
  return {
    scheme,
    check(header, nowSeconds) {
      const headers = readStandardWebhookHeaders(header, nowSeconds, toleranceSeconds);
      return (body) => ({ secretIndex: matchStandardWebhook(headers, body, keys), eventId: headers.id });
    },
  };
}

/**
 * The headers that sign `body` under `scheme` with `secret`: what the sandbox's sender and
 * `trigger` send (a Standard Webhooks delivery carries `eventId` as webhook-id, stamped `nowSeconds`).
 */
export function signDelivery(
  scheme: SignatureScheme,
  secret: string,
  eventId: string,
  body: string,
  nowSeconds = Math.floor(Date.now() / 1000),
): Record<string, string> {
  if (scheme === "svc") return { [SIGNATURE_HEADER]: signPayload(body, secret) };
  return standardWebhookHeaders([standardSecretKey(secret)], eventId, nowSeconds, body);
}
