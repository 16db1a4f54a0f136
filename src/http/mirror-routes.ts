import { Hono } from "hono";
import type { AppEnv } from "./context.js";
import { errorBody } from "./errors.js";

/** What the mirror routes need to read; the mirror store provides it (http never imports it). */
export interface MirrorReader {
  /** The kinds it keeps (the mirror's MIRROR_KINDS). */
  kinds: readonly string[];
  get(kind: string, id: string): Promise<unknown>;
  list(kind: string, restaurantId: string): Promise<unknown[]>;
}

/**
 * GET /mirror/{kind}/{id} and GET /mirror/{kind}?restaurantId=… for operators (mounted behind
 * the admin token by the caller).
 */
export function mirrorRoutes(mirror: MirrorReader): Hono<AppEnv> {
  const route = new Hono<AppEnv>();
  const KINDS = new Set(mirror.kinds);
  route.use("/:kind/*", async (c, next) => {
    if (!KINDS.has(c.req.param("kind"))) return c.json(errorBody("not_found", `mirror kinds are ${[...KINDS].join(", ")}`), 404);
    await next();
  });
  route.get("/:kind", async (c) => {
    if (!KINDS.has(c.req.param("kind"))) return c.json(errorBody("not_found", `mirror kinds are ${[...KINDS].join(", ")}`), 404);
    const restaurantId = c.req.query("restaurantId");
    if (!restaurantId) return c.json(errorBody("invalid_request", "restaurantId query parameter is required"), 400);
    return c.json({ data: await mirror.list(c.req.param("kind"), restaurantId) });
  });
  route.get("/:kind/:id", async (c) => {
    const record = await mirror.get(c.req.param("kind"), c.req.param("id"));
    if (record === undefined) return c.json(errorBody("not_found", `no ${c.req.param("kind")} record ${c.req.param("id")} in the mirror`), 404);
    return c.json(record);
  });
  return route;
}
