import type { MiddlewareHandler } from "hono";
import type { Logger } from "pino";
import type { AppEnv } from "./context.js";

/**
 * One line per request: method, path, status, duration and the event it carried. No headers are
 * logged at all, so neither the signature nor an Authorization header can leak.
 */
export function requestLog(logger: Logger): MiddlewareHandler<AppEnv> {
  return async function logRequest(c, next) {
    const start = performance.now();
    await next();
    const status = c.res.status;
    const line = {
      method: c.req.method,
      path: c.req.path,
      status,
      ms: Math.round((performance.now() - start) * 100) / 100,
      eventId: c.get("eventId"),
      eventType: c.get("eventType"),
      duplicate: c.get("duplicate"),
    };
    if (status >= 500) logger.warn(line, "request");
    else logger.info(line, "request");
  };
}
