import type { Logger } from "pino";
import type { RedisClient } from "./connection.js";

/** A Redis URL fit to print: scheme, host and port, the user kept and the password masked. */
export function printableRedisUrl(url: string): string {
  try {
    const { protocol, host, username, password } = new URL(url);
    const credentials = username || password ? `${username}${password ? ":***" : ""}@` : "";
    return `${protocol}//${credentials}${host}`;
  } catch {
    return "(REDIS_URL is not a URL)";
  }
}

/** How often a Redis that stays away is reported again. @defaultValue 10 s */
export const REDIS_OUTAGE_REPORT_MS = 10_000;

/**
 * Logs a connection's outage as a few lines instead of one per reconnect attempt (ioredis emits
 * `error` on each, every 2 s at most, so an unreachable Redis used to flood the log): one line
 * naming REDIS_URL when it starts, one per interval while it lasts, one when Redis is back.
 */
export function logRedisOutages(
  connection: RedisClient,
  options: { logger: Logger; url: string; kind: string; intervalMs?: number },
): void {
  const { logger, kind } = options;
  const redis = printableRedisUrl(options.url);
  const intervalMs = options.intervalMs ?? REDIS_OUTAGE_REPORT_MS;
  let since: number | undefined;
  let lastLine = 0;
  let attempts = 0;
  connection.on("error", (err: Error & { code?: string }) => {
    attempts++;
    const now = Date.now();
    const reason = err.code ?? err.message;
    if (since === undefined) {
      since = lastLine = now;
      logger.warn(
        { redis, kind, err: reason },
        `Redis at ${redis} does not answer (${reason}): is it running, and is REDIS_URL set to it? Retrying every 2 s`,
      );
    } else if (now - lastLine >= intervalMs) {
      lastLine = now;
      logger.warn(
        { redis, kind, err: reason, attempts, downSeconds: Math.round((now - since) / 1000) },
        `Redis at ${redis} still does not answer (REDIS_URL); retrying`,
      );
    }
  });
  connection.on("ready", () => {
    if (since === undefined) return;
    logger.info({ redis, kind, downSeconds: Math.round((Date.now() - since) / 1000) }, "Redis answers again");
    since = undefined;
    attempts = 0;
  });
}

/** Errors of the connection itself (Redis away, being reconnected): logRedisOutages reports those. */
const CONNECTION_ERROR = /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOTFOUND|EHOSTUNREACH|EPIPE|EAI_AGAIN)$/;
export function isRedisConnectionError(err: Error & { code?: string }): boolean {
  return CONNECTION_ERROR.test(err.code ?? "") || /^Connection is closed|^connect E[A-Z]+ /.test(err.message);
}

/**
 * The `error` listener of a queue or worker: a warning per error, except the connection's own
 * errors while Redis is away, which logRedisOutages already reports once per interval (each of
 * these emitters repeats them on every reconnect attempt: about 5 lines a second with no Redis).
 */
export function warnUnlessOutage(logger: Logger, what: string): (err: Error & { code?: string }) => void {
  return (err) => {
    if (!isRedisConnectionError(err)) logger.warn({ err: err.message }, what);
  };
}
