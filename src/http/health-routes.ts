import { Hono } from "hono";
import type { AppEnv } from "./context.js";
import { errorBody } from "./errors.js";

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
      if (outcome === "timeout") return c.json(errorBody("not_ready", `Redis did not answer within ${timeoutMs} ms`), 503);
      return c.json({ status: "ready" });
    } catch {
      // The error's text may name Redis's host: not for an unauthenticated route.
      return c.json(errorBody("not_ready", "Redis does not answer"), 503);
    } finally {
      clearTimeout(timer);
    }
  });
  return route;
}
