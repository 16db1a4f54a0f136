// The upstream API's key as the spec gives its form (part 5: `svc_live_` then a body), and the one
// form of it that may be shown or used in keys. Below every layer, so the config, the accounts, the
// client and the sandbox (which plays the API) check one rule.
import { createHash } from "node:crypto";

export const API_KEY_PREFIX = "svc_live_";

/** The key's form in words, as a setting's or a field's refusal says it. */
export const API_KEY_FORM = `must start with ${API_KEY_PREFIX} followed by the key body`;

/** Why `key` is not of the key's form (spec part 5: `svc_live_` then a body), or undefined when it is. */
export function apiKeyProblem(key: unknown): string | undefined {
  if (typeof key !== "string" || !key.startsWith(API_KEY_PREFIX)) return `the API key must start with ${API_KEY_PREFIX}`;
  // Whitespace would break the Authorization header, and usually means a copy-paste accident.
  if (!/^\S+$/.test(key.slice(API_KEY_PREFIX.length))) return `the API key must have a body after ${API_KEY_PREFIX}, without spaces`;
  return undefined;
}

/** The key's form (spec part 5): `svc_live_` then a body without whitespace. */
export const isApiKey = (key: string): boolean => apiKeyProblem(key) === undefined;

/**
 * The only form of the key used in Redis keys, logs and metrics: the first 16 hex characters
 * of its SHA-256. Stable across processes, so they share one rate budget per key.
 */
export function apiKeyId(key: string): string {
  return createHash("sha256").update(key).digest("hex").slice(0, 16);
}
