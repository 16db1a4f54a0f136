import { createHash } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import { padBody, paddedBody, stallBody, type createFaults, type FaultRule } from "./faults.js";
import { SandboxError } from "./types.js";

export interface ApiRequestRecord {
  at: number;
  method: string;
  path: string;
  query: string;
  status: number;
  keyHash: string | null;
  /** The W3C trace context the client sent, if any (a test checks the service's traces reach the API). */
  traceparent: string | null;
}

/** The fault matched for a request, for the routes whose answer it changes (repeatCursor). */
export interface ApiEnv {
  Variables: { fault: FaultRule | undefined };
}

export interface ApiGateDeps {
  apiKeys: ReadonlySet<string>;
  admit: (key: string) => number;
  faults: ReturnType<typeof createFaults>;
  requestLog: ApiRequestRecord[];
}

const keyHash = (key: string) => createHash("sha256").update(key).digest("hex").slice(0, 12);

/**
 * What every /api/v1 request passes before its route: it is logged, its key checked and metered,
 * and a matching fault rule applied (a delay, an error answer, a padded or stalled body).
 */
export function apiGate(deps: ApiGateDeps): MiddlewareHandler<ApiEnv> {
  const { faults } = deps;
  return async (c, next) => {
    const record: ApiRequestRecord = {
      at: Date.now(),
      method: c.req.method,
      path: c.req.path,
      query: new URL(c.req.url).search,
      status: 0,
      keyHash: null,
      traceparent: c.req.header("traceparent") ?? null,
    };
    deps.requestLog.push(record);
    let fault: FaultRule | undefined;
    try {
      const key = /^Bearer (\S+)$/.exec(c.req.header("authorization") ?? "")?.[1];
      if (key !== undefined) record.keyHash = keyHash(key);
      if (key === undefined || !key.startsWith("svc_live_") || !deps.apiKeys.has(key)) {
        throw new SandboxError(401, "unauthorized", "a valid Authorization: Bearer svc_live_… key is required");
      }
      const retryAfter = deps.admit(key);
      if (retryAfter > 0) {
        c.header("Retry-After", String(retryAfter));
        throw new SandboxError(429, "rate_limited", "rate limit exceeded: 120 requests per minute per key");
      }
      fault = faults.match(c.req.method, c.req.path);
      const delayMs = fault?.delayMs;
      if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
      if (fault?.status) {
        if (fault.status === 429) c.header("Retry-After", String(fault.retryAfterSeconds ?? 1));
        throw new SandboxError(fault.status as 500, fault.status === 429 ? "rate_limited" : "internal", `injected fault ${fault.status}`);
      }
    } catch (err) {
      const e = err as SandboxError;
      record.status = e.status;
      if (fault?.status && fault.padBodyBytes)
        return paddedBody(
          { head: `{"error":{"code":"${e.code}","message":"${e.message} `, fill: "x", tail: '"}}', bytes: fault.padBodyBytes },
          { status: e.status, headers: c.res.headers },
        );
      return c.json({ error: { code: e.code, message: e.message } }, e.status);
    }
    c.set("fault", fault);
    await next();
    record.status = c.res.status;
    if (fault?.padBodyBytes) c.res = await padBody(c.res, fault.padBodyBytes);
    if (fault?.stallBodyMs) c.res = await stallBody(c.res, fault.stallBodyMs);
  };
}
