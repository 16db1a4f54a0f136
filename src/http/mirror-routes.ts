import { Hono } from "hono";
import { printable } from "../mirror/values.js";
import type { AppEnv } from "./request-log.js";
import { errorBody } from "./errors.js";

/** What the mirror routes read; the service wires the mirror store in (http never imports it). */
export interface MirrorReader {
  /** The kinds it keeps (the mirror's MIRROR_KINDS). */
  kinds: readonly string[];
  get(kind: string, id: string): Promise<unknown>;
  /** One page of a kind, filtered by the query's parameters; a bad one throws a coded error (400). */
  list(kind: string, query: Record<string, string>): Promise<{ data: unknown[]; nextCursor: string | null }>;
}

/**
 * GET /mirror/{kind}?restaurantId=&status=&from=&to=&limit=&cursor= and GET /mirror/{kind}/{id},
 * read from SQL, for operators (mounted behind the admin token by the caller).
 */
export function mirrorRoutes(mirror: MirrorReader): Hono<AppEnv> {
  const route = new Hono<AppEnv>();
  const kinds = new Set(mirror.kinds);
  route.use("/:kind/*", async function knownKind(c, next) {
    if (!kinds.has(c.req.param("kind"))) return c.json(errorBody("not_found", `mirror kinds are ${[...kinds].join(", ")}`), 404);
    await next();
  });
  // The check above runs for "/:kind" too ("/:kind/*" matches it).
  route.get("/:kind", async (c) => c.json(await mirror.list(c.req.param("kind"), c.req.query())));
  route.get("/:kind/:id", async (c) => {
    const { kind, id } = c.req.param();
    const record = await mirror.get(kind, id);
    if (record === undefined) return c.json(errorBody("not_found", `no ${kind} record ${printable(id)} in the mirror`), 404);
    return c.json(record);
  });
  return route;
}
