import { Hono } from "hono";
import type { AppEnv } from "./context.js";
import { errorBody } from "./errors.js";

/**
 * What is not ready, in words safe for an unauthenticated route (never a host or a driver's error
 * text): the readiness check rejects with it.
 */
export class NotReadyError extends Error {
  readonly code = "not_ready";
  constructor(readonly reason: string) {
    super(reason);
    this.name = "NotReadyError";
  }
}

/** How long /readyz waits for Redis before it answers 503: well under a probe's own timeout. */
export const READY_TIMEOUT_MS = 2000;

/**
 * /healthz: the process is alive. /readyz: Redis answers, so events can be accepted. The ping is
 * bounded: a connection that queues commands while Redis is away would otherwise hold the probe
 * open forever (the worker role's connection never gives up).
 */
export function healthRoutes(ping: () => Promise<void>, timeoutMs: number = READY_TIMEOUT_MS): Hono<AppEnv> {
  const route = new Hono<AppEnv>();
  route.get("/healthz", (c) => c.json({ status: "ok" }));
  route.get("/readyz", async function readyz(c) {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), timeoutMs)));
    try {
      const outcome = await Promise.race([ping(), deadline]);
      if (outcome === "timeout") return c.json(errorBody("not_ready", `readiness check did not answer within ${timeoutMs} ms`), 503);
      return c.json({ status: "ready" });
    } catch (err) {
      // Another error's text may name a host: not for an unauthenticated route.
      return c.json(errorBody("not_ready", err instanceof NotReadyError ? err.reason : "Redis does not answer"), 503);
    } finally {
      clearTimeout(timer);
    }
  });
  return route;
}
