import type { MiddlewareHandler } from "hono";
import type { Logger } from "pino";
import { RequestAbortedError } from "./errors.js";

/** Per-request values the routes leave for the request log line. */
export interface AppEnv {
  Variables: {
    eventId?: string;
    eventType?: string;
    duplicate?: boolean;
    /** A probe or an asset (quietRequest): its line is debug while it succeeds. */
    quiet?: boolean;
  };
}

/**
 * Marks the routes it is put on as a probe or an asset (/healthz, /readyz, /metrics, the console's
 * and the dashboard's static files, the icon): asked every few seconds by a load balancer or a
 * scraper, or once per page view, a line each would bury the lines worth reading. Their answers
 * of 400 and above stay at info or warn (a probe failing, a scraper refused).
 */
export const quietRequest: MiddlewareHandler<AppEnv> = async function quietRequest(c, next) {
  c.set("quiet", true);
  await next();
};

/** Longest path written to a log line: a flood of 8 KB URLs must not become 8 KB lines. */
const LOGGED_PATH_CHARS = 256;

/** The path cut to LOGGED_PATH_CHARS, with a marker saying how much was left out. */
export function boundedPath(path: string): string {
  const max = LOGGED_PATH_CHARS;
  return path.length <= max ? path : `${path.slice(0, max)}…[+${path.length - max} chars]`;
}

/**
 * One line per request: method, path (bounded), status, duration and the event it carried. No headers are
 * logged at all, so neither the signature nor an Authorization header can leak.
 *
 * A delivery the edge accepted is logged at debug: it is stored in Redis, counted by the metrics
 * and recorded in the event log once handled, and an info line per event was the edge's largest
 * cost we control (13–18 % of its CPU under load in two interleaved measurements) and as many log
 * lines as events; LOG_LEVEL=debug brings them back (`npm run dev` runs at debug). Probes and
 * assets that succeed are debug too (quietRequest). Refusals and every other route are info, 5xx
 * warn, a client gone mid-body debug.
 */
export function requestLog(logger: Logger): MiddlewareHandler<AppEnv> {
  // The line's fields are fixed and none is a header or a credential, so the logger's redaction
  // paths have nothing to find in it: walking them cost ~2.5 µs of every request's ~75. The scrub
  // of configured secret values (a stream hook the child keeps) still runs over the line.
  const lines = logger.child({}, { redact: [] });
  return async function logRequest(c, next) {
    const start = performance.now();
    await next();
    const status = c.res.status;
    const eventId = c.get("eventId");
    // A client that went away mid-body is its own failure, not an alert (it costs nothing to send).
    const aborted = c.error instanceof RequestAbortedError;
    const level =
      aborted || (eventId !== undefined && status < 300) || (c.get("quiet") === true && status < 400)
        ? "debug"
        : status >= 500
          ? "warn"
          : "info";
    if (!lines.isLevelEnabled(level)) return;
    const line = {
      method: c.req.method,
      path: boundedPath(c.req.path),
      status,
      ms: Math.round((performance.now() - start) * 100) / 100,
      eventId,
      eventType: c.get("eventType"),
      duplicate: c.get("duplicate"),
      ...(aborted ? { aborted } : {}),
    };
    lines[level](line, "request");
  };
}
