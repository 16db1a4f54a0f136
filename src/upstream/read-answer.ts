import { errorFromResponse, UpstreamPageRefusedError, UpstreamResponseError } from "./errors.js";
import { parseRetryAfter } from "./retry.js";

/**
 * How much of an error answer is read: enough for the documented `{ error: { code, message } }`
 * with a long message; the rest is never read, so a 5 MB message costs 4 KB here and in every
 * failed job's record of it.
 */
export const MAX_ERROR_BODY_BYTES = 4096;

/**
 * Reads a body as text, at most `maxBytes` of it: streamed, and the stream cancelled once the cap
 * is passed (or at once when Content-Length already says so), so an oversized answer never sits in
 * memory whole. `cut` says the body went on past what was kept.
 */
export async function readBodyUpTo(res: Response, maxBytes: number): Promise<{ text: string; cut: boolean }> {
  const declared = Number(res.headers.get("content-length"));
  const body = res.body;
  if (!body) return { text: "", cut: false };
  if (Number.isFinite(declared) && declared > maxBytes) {
    await body.cancel().catch(() => undefined);
    return { text: "", cut: true };
  }
  const reader = (body as ReadableStream<Uint8Array>).getReader();
  const chunks: Uint8Array[] = [];
  let kept = 0;
  let cut = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (kept + value.byteLength > maxBytes) {
      chunks.push(value.subarray(0, maxBytes - kept));
      kept = maxBytes;
      cut = true;
      await reader.cancel().catch(() => undefined);
      break;
    }
    chunks.push(value);
    kept += value.byteLength;
  }
  return { text: new TextDecoder().decode(Buffer.concat(chunks, kept)), cut };
}

/**
 * The JSON of an answer, or the typed error it stands for: an error status becomes the error of
 * its status (its body read to MAX_ERROR_BODY_BYTES), a success body over `maxBytes` is refused
 * (`page_too_large`) without being read further, and one that is not JSON is `invalid_response`.
 * Refusals are not retryable: the same read would get the same answer.
 */
export async function readAnswer(res: Response, options: { maxBytes: number; context: string }): Promise<unknown> {
  const { context } = options;
  if (!res.ok) {
    const { text, cut } = await readBodyUpTo(res, MAX_ERROR_BODY_BYTES);
    throw errorFromResponse({
      status: res.status,
      body: text,
      cutAtBytes: cut ? MAX_ERROR_BODY_BYTES : undefined,
      retryAfterMs: parseRetryAfter(res.headers.get("retry-after")),
      context,
    });
  }
  const { text, cut } = await readBodyUpTo(res, options.maxBytes);
  if (cut)
    throw new UpstreamPageRefusedError(
      `${context} answered a body over ${options.maxBytes} bytes (API_MAX_PAGE_BYTES): refused, the rest not read`,
      { status: res.status, code: "page_too_large" },
    );
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new UpstreamResponseError(`${context} answered non-JSON`, { status: res.status });
  }
}
