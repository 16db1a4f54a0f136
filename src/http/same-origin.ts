import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "./context.js";
import { errorBody } from "./errors.js";

/** Methods that change nothing, so a cross-site request gains nothing by sending them. */
const SAFE_METHODS = new Set(["GET", "HEAD"]);
/** Sec-Fetch-Site values a browser sends for the operator's own page or a typed-in request. */
const TRUSTED_FETCH_SITES = new Set(["same-origin", "none"]);
const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

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
    if ((type !== undefined || hasBody(header)) && !JSON_TYPE.test(type ?? "")) {
      return c.json(errorBody("unsupported_media_type", "operator request bodies must be application/json"), 415);
    }
    await next();
  };
}
