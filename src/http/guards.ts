import { createHash, timingSafeEqual } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "./request-log.js";
import { errorBody } from "./errors.js";
import { isJsonMediaType } from "./json-media-type.js";

// The operator surface's guards, in the order they run: the answer's security headers (set after
// the handler, so refusals carry them too), the admin token, then the same-origin check (the
// answer when no token is configured at all: mountOperatorOff, operator-routes.ts).

/**
 * The one rule against framing (clickjacking on the dashboard and the console): CSP
 * `frame-ancestors 'none'` (inside `csp`) for current browsers, `X-Frame-Options: DENY` for older ones.
 */
function forbidFraming(headers: Headers, csp: string): void {
  headers.set("Content-Security-Policy", csp);
  headers.set("X-Frame-Options", "DENY");
}

/**
 * The guards of every operator route, in their order: the answer's headers (set after the
 * handler, so refusals carry them), the token (a 401 tells nothing more), then the cross-site
 * check, so a page the operator visits cannot act with their credentials.
 */
export function operatorGuards(adminToken: string, headers: MiddlewareHandler<AppEnv> = denyFraming()): MiddlewareHandler<AppEnv>[] {
  return [headers, requireAdminToken(adminToken), requireSameOrigin()];
}

/**
 * Forbids other pages from framing the response (clickjacking on the dashboard): CSP
 * `frame-ancestors 'none'` for current browsers, `X-Frame-Options: DENY` for older ones.
 * Set after the handler so refusals (401, 403) carry it too.
 */
export function denyFraming(): MiddlewareHandler<AppEnv> {
  return async function noFraming(c, next) {
    await next();
    forbidFraming(c.res.headers, "frame-ancestors 'none'");
  };
}

/**
 * The console's answers may load only what this origin serves (its own CSS and script, no inline
 * script), are never framed, never cached (they show live state and payloads) and send no
 * Referer (URLs carry event ids and filters). Set after the handler so refusals carry them too.
 */
export function consoleHeaders(): MiddlewareHandler<AppEnv> {
  const csp = "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'";
  return async function consoleSecurityHeaders(c, next) {
    await next();
    forbidFraming(c.res.headers, csp);
    c.res.headers.set("X-Content-Type-Options", "nosniff");
    c.res.headers.set("Referrer-Policy", "no-referrer");
    if (!c.res.headers.has("Cache-Control")) c.res.headers.set("Cache-Control", "no-store");
  };
}

const digest = (s: string) => createHash("sha256").update(s).digest();

/** The token a request presents: `Bearer <token>`, or Basic auth whose password is the token. */
function presentedToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const [scheme, value = ""] = header.trim().split(/\s+/, 2);
  if (scheme?.toLowerCase() === "bearer") return value;
  if (scheme?.toLowerCase() === "basic") {
    const decoded = Buffer.from(value, "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    return colon >= 0 ? decoded.slice(colon + 1) : undefined;
  }
  return undefined;
}

/**
 * Guards operator routes with ADMIN_TOKEN: `Authorization: Bearer <token>` for scripts and
 * Prometheus, or Basic auth (any user name, the token as password) so a browser can open the
 * dashboard. Digests are compared, so the comparison is constant-time whatever was sent.
 */
export function requireAdminToken(token: string): MiddlewareHandler<AppEnv> {
  const expected = digest(token);
  return async function adminAuth(c, next) {
    const presented = presentedToken(c.req.header("authorization"));
    if (presented === undefined || !timingSafeEqual(digest(presented), expected)) {
      return c.json(errorBody("unauthorized", "a valid ADMIN_TOKEN is required (Bearer, or Basic with the token as password)"), 401, {
        "WWW-Authenticate": 'Basic realm="svc-webhooks admin", charset="UTF-8"',
      });
    }
    await next();
  };
}

/** Methods that change nothing, so a cross-site request gains nothing by sending them. */
const SAFE_METHODS = new Set(["GET", "HEAD"]);
/** Sec-Fetch-Site values a browser sends for the operator's own page or a typed-in request. */
const TRUSTED_FETCH_SITES = new Set(["same-origin", "none"]);

const hasBody = (header: (name: string) => string | undefined) => {
  const length = header("content-length");
  return (length !== undefined && length !== "0") || header("transfer-encoding") !== undefined;
};

/**
 * Refuses cross-site requests that could change something (CSRF): a browser holding the
 * operator's Basic credentials sends them to any page's form or fetch. Every method but GET/HEAD
 * must come from this origin: `Sec-Fetch-Site` decides when the browser sends it (`same-origin`,
 * or `none` for a request the user made directly), else `Origin` must equal the request's own
 * origin. A request with neither header is not from a browser page (curl, scripts with a Bearer
 * token) and passes. A body must be JSON (415 otherwise): a cross-site form can only send
 * `text/plain`, urlencoded or multipart without a CORS preflight.
 *
 * The request's own origin is read from its URL (the Host header): a proxy in front must keep Host.
 *
 * @example root.use("/admin/*", requireAdminToken(token), requireSameOrigin())
 */
export function requireSameOrigin(): MiddlewareHandler<AppEnv> {
  return async function sameOrigin(c, next) {
    if (SAFE_METHODS.has(c.req.method)) return next();
    const header = (name: string) => c.req.header(name);
    const site = header("sec-fetch-site");
    const origin = header("origin");
    const refused = site !== undefined ? !TRUSTED_FETCH_SITES.has(site) : origin !== undefined && origin !== new URL(c.req.url).origin;
    if (refused) {
      return c.json(errorBody("cross_origin_request", "operator requests that change something must come from this origin"), 403);
    }
    const type = header("content-type");
    if ((type !== undefined || hasBody(header)) && !isJsonMediaType(type)) {
      return c.json(errorBody("unsupported_media_type", "operator request bodies must be application/json"), 415);
    }
    await next();
  };
}
