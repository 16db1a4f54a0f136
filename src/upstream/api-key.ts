import { createHash } from "node:crypto";

export const API_KEY_PREFIX = "svc_live_";

/** A key of the wrong form. Its message never contains the key (it would end up in logs). */
export class ApiKeyError extends Error {
  readonly code = "invalid_api_key";
  constructor(message: string) {
    super(message);
    this.name = "ApiKeyError";
  }
}

/** The key's form (spec part 5): `svc_live_` then a body without whitespace. */
export function isApiKey(key: string): boolean {
  return key.startsWith(API_KEY_PREFIX) && /^\S+$/.test(key.slice(API_KEY_PREFIX.length));
}

/** Checks the key's form (spec part 5: `svc_live_` then the key body) and returns it unchanged. */
export function parseApiKey(key: string): string {
  if (typeof key !== "string" || !key.startsWith(API_KEY_PREFIX)) {
    throw new ApiKeyError(`the API key must start with ${API_KEY_PREFIX}`);
  }
  // Whitespace would break the Authorization header, and usually means a copy-paste accident.
  if (!/^\S+$/.test(key.slice(API_KEY_PREFIX.length))) {
    throw new ApiKeyError(`the API key must have a body after ${API_KEY_PREFIX}, without spaces`);
  }
  return key;
}

/**
 * The only form of the key used in Redis keys, logs and metrics: the first 16 hex characters
 * of its SHA-256. Stable across processes, so they share one rate budget per key.
 */
export function apiKeyId(key: string): string {
  return createHash("sha256").update(key).digest("hex").slice(0, 16);
}
