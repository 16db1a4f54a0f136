// Which Content-Type a request body may declare, at the webhook edge and on the operator routes
// (guards.ts): JSON, in UTF-8.

/**
 * `application/json` or a structured `+json` type (RFC 6839: `application/cloudevents+json`, …),
 * case-insensitive, with any parameters, of which a `charset` must be UTF-8: the edge decodes the
 * body as UTF-8 only, and a body declared in another charset would be stored as other text than
 * was meant. A missing header is not JSON.
 */
const JSON_TYPE = /^\s*application\/(?:json|[a-z0-9!#$&^_.-]+\+json)\s*(?:;|$)/i;
const CHARSET = /;\s*charset\s*=\s*"?([^";\s]*)"?/i;

export function isJsonMediaType(header: string | undefined): boolean {
  if (header === undefined || !JSON_TYPE.test(header)) return false;
  const charset = CHARSET.exec(header)?.[1];
  return charset === undefined || /^utf-?8$/i.test(charset);
}
