import { createHash, timingSafeEqual } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "./context.js";
import { errorBody } from "./errors.js";

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
