import { Hono } from "hono";
import type { AppEnv } from "./context.js";
import { errorBody } from "./errors.js";

/** /healthz: the process is alive. /readyz: Redis answers, so events can be accepted. */
export function healthRoutes(ping: () => Promise<void>): Hono<AppEnv> {
  const route = new Hono<AppEnv>();
  route.get("/healthz", (c) => c.json({ status: "ok" }));
  route.get("/readyz", async (c) => {
    try {
      await ping();
      return c.json({ status: "ready" });
    } catch {
      return c.json(errorBody("not_ready", "Redis does not answer"), 503);
    }
  });
  return route;
}
