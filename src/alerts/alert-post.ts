// One POST of a notification to one destination, and what the destination answered, told so that
// a log line or `alerts test` can say it: the host (never the path or query, which may be the
// credential: Slack's is), the status or the network error's code.
import { oneLine } from "../base/text.js";
import { networkErrno, readBodyUpTo } from "../upstream/client.js";
import type { AlertMessage } from "./alert-message.js";

/** How long one POST may take, the answer's body included: a destination that hangs holds a slot no longer. */
export const ALERT_TIMEOUT_MS = 10_000;

/** The most of an answer's body read: enough for Slack's `invalid_token`, never a large page held. */
const ANSWER_BYTES = 1024;
/** The most of that body a line shows. */
const SAID_CHARS = 200;

/** What one destination answered to one POST. */
export interface AlertAnswer {
  /** The destination as lines name it: its host (and port), never its path or query. */
  destination: string;
  /** A 2xx status. */
  ok: boolean;
  status?: number;
  statusText?: string;
  /** The start of the answer's body, on one line, bounded. */
  said?: string;
  /** Why there was no answer: the network error's code (ECONNREFUSED, ENOTFOUND, …), or the time it took. */
  error?: string;
}

/** The destination of a URL as lines name it: the host, with its port when it has one. */
const destinationOf = (url: string): string => (URL.canParse(url) ? new URL(url).host : "an unparsable URL");

/**
 * POSTs `message` to `url` within `timeoutMs` and reads at most 1 KiB of the answer. Never
 * throws: a network error or a timeout is an answer without a status. Redirects are not followed
 * (a notification goes to the URL configured, nowhere else): a 3xx is not delivered.
 */
export async function postAlert(url: string, message: AlertMessage, timeoutMs = ALERT_TIMEOUT_MS): Promise<AlertAnswer> {
  const destination = destinationOf(url);
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: message.headers,
      body: message.body,
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs),
    });
    const said = oneLine((await readBodyUpTo(response, ANSWER_BYTES)).text, SAID_CHARS);
    return {
      destination,
      ok: response.ok,
      status: response.status,
      statusText: response.statusText,
      ...(said === "" ? {} : { said }),
    };
  } catch (err) {
    return { destination, ok: false, error: networkReason(err, timeoutMs) };
  }
}

/** fetch's reason: the network error's code (networkErrno, as the API client names it), or the timeout. */
function networkReason(err: unknown, timeoutMs: number): string {
  const e = err as { name?: unknown; message?: unknown; cause?: { name?: unknown } };
  if (e.name === "TimeoutError" || e.cause?.name === "TimeoutError") return `no answer within ${timeoutMs} ms`;
  const code = networkErrno(err);
  if (code !== "network") return code;
  // A message that may name the URL (an unparsable one's does) is not repeated: its path may be the credential.
  return typeof e.message === "string" && !e.message.includes("/") ? oneLine(e.message, SAID_CHARS) : "the request failed";
}

/** What the destination answered, as a clause: "127.0.0.1:4000 answered 500 Internal Server Error: oops". */
export function describeAnswer(answer: AlertAnswer): string {
  if (answer.status === undefined) return `${answer.destination} did not answer: ${answer.error ?? "the request failed"}`;
  const status = `${answer.status}${answer.statusText ? ` ${answer.statusText}` : ""}`;
  return `${answer.destination} answered ${status}${answer.said ? `: ${answer.said}` : ""}`;
}
