import { createHash } from "node:crypto";

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

export class EnvelopeError extends Error {
  readonly code = "invalid_event";
  constructor(message: string) {
    super(message);
    this.name = "EnvelopeError";
  }
}

const decoder = new TextDecoder("utf-8", { fatal: true });

/** Parses verified body bytes into an envelope; throws EnvelopeError on anything else. */
export function parseEnvelope(raw: Uint8Array): EventEnvelope {
  let body: unknown;
  let text: string;
  try {
    text = decoder.decode(raw);
    body = JSON.parse(text);
  } catch {
    throw new EnvelopeError("body is not valid UTF-8 JSON");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new EnvelopeError("body must be a JSON object");
  }
  const payload = body as Record<string, unknown>;
  if (typeof payload.type !== "string" || payload.type.length === 0) {
    throw new EnvelopeError('body must have a non-empty string "type"');
  }
  if (payload.id !== undefined && (typeof payload.id !== "string" || payload.id.length === 0)) {
    throw new EnvelopeError('"id", when present, must be a non-empty string');
  }
  const id = (payload.id as string | undefined) ?? createHash("sha256").update(raw).digest("hex");
  return { id, type: payload.type, payload, text };
}
