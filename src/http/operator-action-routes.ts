import { Hono, type Context } from "hono";
import type { Logger } from "pino";
import * as z from "zod";
import type { AppEnv } from "./context.js";
import { errorBody } from "./errors.js";
import { eventIdParam } from "./event-id-param.js";

/** What the operator's write routes call; the service wires worker/operator-actions.ts in (http never imports it). */
export interface OperatorActionsPort {
  replayEvent(
    id: string,
    options: { handler?: string; idempotencyKey?: string },
  ): Promise<{ event: string; replay: { id: string; handlers: string[] } }>;
  replayMatching(request: {
    filter: Record<string, string | undefined>;
    dryRun?: boolean;
    fresh?: boolean;
    confirm?: number;
    idempotencyKey?: string;
  }): Promise<{ count: number; id?: string }>;
  bulkProgress(id: string): Promise<BulkReplayView>;
  cancelBulkReplay(id: string): Promise<BulkReplayView>;
  requestSync(
    request: "reconcile" | "backfill",
    options: { kinds?: string[]; since?: string; restart?: boolean },
  ): Promise<{ job: string }>;
}

/** A bulk replay's progress (worker/bulk-replay-progress.ts BulkReplayProgress). */
export interface BulkReplayView {
  id: string;
  total: number;
  done: number;
  failed: number;
  withdrawn: number;
  state: "running" | "done" | "cancelled";
}

const ReplayOne = z.strictObject({ handler: z.string().min(1).max(100).optional() });
// A filter with at least one field, or `"all": true` for every event: an empty body or `{}` is
// never "all". A client that sent `/events/./replay` (an event ".") reaches this route after URL
// normalisation, with the single replay's body (`{}` or `{ handler }`), and is refused instead
// of replaying the whole log.
const FILTER_OR_ALL =
  'send a filter (type, status, handler, fingerprint, since, until) or "all": true for every event; one event: POST /events/{id}/replay';
const ReplayMany = z
  .strictObject({
    filter: z
      .strictObject({
        type: z.string().optional(),
        status: z.string().optional(),
        handler: z.string().optional(),
        fingerprint: z.string().optional(),
        since: z.string().optional(),
        until: z.string().optional(),
      })
      .optional(),
    all: z.literal(true, { error: '"all" takes only true' }).optional(),
    dryRun: z.boolean().optional(),
    fresh: z.boolean().optional(),
    confirm: z.number().int().min(0).optional(),
  })
  .superRefine((b, ctx) => {
    const fields = Object.values(b.filter ?? {}).filter((v: string | undefined) => v !== undefined).length;
    if (b.all === true && fields > 0)
      ctx.addIssue({ code: "custom", path: ["all"], message: '"all": true replays every event; drop the filter or "all"' });
    if (b.all !== true && fields === 0) ctx.addIssue({ code: "custom", path: ["filter"], message: FILTER_OR_ALL });
  });
const Backfill = z.strictObject({ kinds: z.array(z.string()).optional(), since: z.string().optional(), restart: z.boolean().optional() });
const Empty = z.strictObject({});

class InvalidRequestError extends Error {
  readonly code = "invalid_request";
}

/** The JSON body, checked against `schema`; an empty body reads as `{}`. */
async function body<T>(c: Context<AppEnv>, schema: z.ZodType<T>): Promise<T> {
  const text = await c.req.text();
  let parsed: unknown = {};
  if (text.trim() !== "") {
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new InvalidRequestError("the body must be JSON");
    }
  }
  const result = schema.safeParse(parsed);
  if (!result.success) {
    const issue = result.error.issues[0];
    const where = issue?.path.join(".") ?? "";
    throw new InvalidRequestError(`${where === "" ? "body" : where}: ${issue?.message ?? "invalid"}`);
  }
  return result.data;
}

/** An Idempotency-Key header: 1–200 visible ASCII characters, or none. */
function idempotencyKey(c: Context<AppEnv>): { idempotencyKey?: string } {
  const key = c.req.header("idempotency-key");
  if (key === undefined) return {};
  if (!/^[\x21-\x7e]{1,200}$/.test(key)) throw new InvalidRequestError("Idempotency-Key must be 1 to 200 visible ASCII characters");
  return { idempotencyKey: key };
}

/**
 * The operator's write API (the console's buttons and the CLI use it): replay one event or a
 * filtered set, follow a bulk replay, ask for a reconciliation or a backfill. Mounted behind the
 * admin token and the same-origin check; every call is one audit line (who, route, target, count).
 */
export function operatorActionRoutes(actions: OperatorActionsPort, logger: Logger): Hono<AppEnv> {
  const route = new Hono<AppEnv>();
  const audit = (action: string, target: unknown, count?: number) =>
    logger.info({ who: "admin", route: action, target, ...(count !== undefined ? { count } : {}) }, "operator action");

  route.post("/events/replay", async (c) => {
    const { filter = {}, dryRun, fresh, confirm } = await body(c, ReplayMany);
    const result = await actions.replayMatching({
      filter,
      dryRun: dryRun ?? false,
      fresh: fresh ?? false,
      ...(confirm !== undefined ? { confirm } : {}),
      ...idempotencyKey(c),
    });
    audit(
      dryRun ? "POST /events/replay (dry run)" : "POST /events/replay",
      { filter, ...(result.id ? { bulk: result.id } : {}) },
      result.count,
    );
    // The count first: what the operator just started, then where to follow (or stop) it.
    return dryRun ? c.json({ count: result.count }, 200) : c.json({ count: result.count, id: result.id }, 202);
  });
  route.get("/events/replays/:id", async (c) => c.json(await actions.bulkProgress(c.req.param("id"))));
  route.delete("/events/replays/:id", async (c) => {
    const result = await actions.cancelBulkReplay(c.req.param("id"));
    audit("DELETE /events/replays/:id", { bulk: result.id, state: result.state }, result.withdrawn);
    return c.json(result);
  });
  route.post("/events/:id/replay", async (c) => {
    const id = eventIdParam(c);
    const { handler } = await body(c, ReplayOne);
    const result = await actions.replayEvent(id, { ...(handler ? { handler } : {}), ...idempotencyKey(c) });
    audit("POST /events/:id/replay", { event: result.event, replay: result.replay.id, handler: handler ?? "*" }, 1);
    return c.json(result, 202);
  });
  route.post("/sync/reconcile", async (c) => {
    await body(c, Empty);
    const result = await actions.requestSync("reconcile", {});
    audit("POST /sync/reconcile", { job: result.job });
    return c.json(result, 202);
  });
  route.post("/sync/backfill", async (c) => {
    const options = await body(c, Backfill);
    const result = await actions.requestSync("backfill", options);
    audit("POST /sync/backfill", { job: result.job, ...options });
    return c.json(result, 202);
  });
  route.all("/sync/*", (c) => c.json(errorBody("not_found", "sync routes: POST /sync/reconcile, POST /sync/backfill"), 404));
  return route;
}
