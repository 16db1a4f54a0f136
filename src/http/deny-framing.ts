import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "./context.js";

/**
 * Forbids other pages from framing the response (clickjacking on the dashboard): CSP
 * `frame-ancestors 'none'` for current browsers, `X-Frame-Options: DENY` for older ones.
 * Set after the handler so refusals (401, 403) carry it too.
 */
export function denyFraming(): MiddlewareHandler<AppEnv> {
  return async function noFraming(c, next) {
    await next();
    c.res.headers.set("Content-Security-Policy", "frame-ancestors 'none'");
    c.res.headers.set("X-Frame-Options", "DENY");
  };
}
