import { Hono } from "hono";
import type { AppEnv } from "./context.js";
import { errorBody } from "./errors.js";
import { eventIdParam } from "./event-id-param.js";

/** What the event-log routes read; the service wires the event log in (http never imports it). */
export interface EventLogReader {
  get(id: string): Promise<unknown>;
  /** One page of the log filtered by the query's parameters; a bad one throws a coded error (400). */
  query(query: Record<string, string>): Promise<{ data: unknown[]; nextCursor: string | null }>;
}

/**
 * GET /events?type=order.*&status=failed&since=&until=&handler=&limit=&cursor= and GET /events/{id}:
 * what was received and what each handler did with it (mounted behind the admin token).
 */
export function eventRoutes(log: EventLogReader): Hono<AppEnv> {
  const route = new Hono<AppEnv>();
  route.get("/", async (c) => c.json(await log.query(c.req.query())));
  route.get("/:id", async (c) => {
    const id = eventIdParam(c);
    const event = await log.get(id);
    if (event === undefined) return c.json(errorBody("not_found", `no event ${id} in the event log`), 404);
    return c.json(event);
  });
  return route;
}
