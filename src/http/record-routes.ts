import { Hono } from "hono";
import { printable } from "../mirror/values.js";
import type { RecordStory } from "../mirror/record-story.js";
import type { AppEnv } from "./request-log.js";
import { errorBody } from "./errors.js";

/** What the record routes read and ask; the service wires the record story and the operator actions in (http imports only the story's type). */
export interface RecordReader {
  /** The mirror's kinds (orders, bookings, menu-items, reviews). */
  kinds: readonly string[];
  /** The record's story; undefined when the service holds nothing of it. A bad id or cursor throws invalid_filter. */
  story(kind: string, id: string, cursor?: string): Promise<RecordStory | undefined>;
  /** Asks for a narrow read of the record (the refresh its events would schedule); throws a coded error when it cannot. */
  refresh(kind: string, id: string): Promise<{ kind: string; id: string; restaurantId: string }>;
}

/**
 * GET /records/{kind}/{id}?cursor= (the record and everything the log says of it, newest first)
 * and POST /records/{kind}/{id}/refresh (read it from the API now), for operators: mounted
 * behind the admin token and the same-origin check by the caller.
 */
export function recordRoutes(records: RecordReader): Hono<AppEnv> {
  const route = new Hono<AppEnv>();
  const kinds = new Set(records.kinds);
  route.use("/:kind/*", async function knownKind(c, next) {
    if (!kinds.has(c.req.param("kind"))) return c.json(errorBody("not_found", `record kinds are ${[...kinds].join(", ")}`), 404);
    await next();
  });
  route.get("/:kind/:id", async (c) => {
    const { cursor, ...unknown } = c.req.query();
    const extra = Object.keys(unknown)[0];
    if (extra !== undefined) return c.json(errorBody("invalid_filter", `unknown parameter ${extra}; this route takes cursor`), 400);
    const { kind, id } = c.req.param();
    const story = await records.story(kind, id, cursor);
    const unknownRecord = `no ${kind} record ${printable(id)}: neither the mirror nor the event log knows it`;
    return story === undefined ? c.json(errorBody("not_found", unknownRecord), 404) : c.json(story);
  });
  route.post("/:kind/:id/refresh", async (c) => c.json(await records.refresh(c.req.param("kind"), c.req.param("id")), 202));
  return route;
}
