import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../context.js";

/**
 * The console's answers may load only what this origin serves (its own CSS and script, no inline
 * script), are never framed, never cached (they show live state and payloads) and send no
 * Referer (URLs carry event ids and filters). Set after the handler so refusals carry them too.
 */
export function consoleHeaders(): MiddlewareHandler<AppEnv> {
  const csp = "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'";
  return async function consoleSecurityHeaders(c, next) {
    await next();
    c.res.headers.set("Content-Security-Policy", csp);
    c.res.headers.set("X-Frame-Options", "DENY");
    c.res.headers.set("X-Content-Type-Options", "nosniff");
    c.res.headers.set("Referrer-Policy", "no-referrer");
    if (!c.res.headers.has("Cache-Control")) c.res.headers.set("Cache-Control", "no-store");
  };
}
