import type { Context } from "hono";
import { EventIdentifierError } from "../events/envelope.js";
import { idProblem } from "../mirror/id-text.js";

/**
 * The `:id` of an operator route, refused `400 invalid_event_id` when it cannot be an event id
 * (the id rule, mirror/id-text.ts, which the edge applies too: over 200 characters, control
 * characters, "." or "..", which a route only sees when a client skipped URL normalisation). The
 * event log is not asked.
 */
export function eventIdParam(c: Context): string {
  const id = c.req.param("id");
  if (id === undefined || idProblem(id) !== undefined) throw new EventIdentifierError("id");
  return id;
}
