import { Hono, type Context } from "hono";
import { apiGate, type ApiEnv, type ApiGateDeps } from "./api-gate.js";
import { paginate, parseLimit } from "./pagination.js";
import { LIST_KEYS, partitionFor } from "./list-indexes.js";
import type { SandboxStore } from "./store.js";
import { SandboxError } from "./types.js";

const ORDER_STATUSES = ["PENDING", "CONFIRMED", "PREPARING", "READY", "DELIVERED", "CANCELLED", "REFUNDED"];
const ORDER_TYPES = ["DINE_IN", "TAKEAWAY", "DELIVERY"];
const DAY = /^\d{4}-\d{2}-\d{2}$/;

function oneOf(value: string | undefined, allowed: string[], name: string): string | undefined {
  if (value !== undefined && !allowed.includes(value))
    throw new SandboxError(400, "invalid_request", `${name} must be one of ${allowed.join(", ")}`);
  return value;
}

function day(value: string | undefined, name: string): string | undefined {
  if (value !== undefined && (!DAY.test(value) || Number.isNaN(Date.parse(value))))
    throw new SandboxError(400, "invalid_request", `${name} must be a date YYYY-MM-DD`);
  return value;
}

async function jsonBody(c: Context): Promise<Record<string, unknown>> {
  try {
    const body = (await c.req.json()) as unknown;
    if (typeof body === "object" && body !== null && !Array.isArray(body)) return body as Record<string, unknown>;
  } catch {
    // fall through
  }
  throw new SandboxError(400, "invalid_request", "body must be a JSON object");
}

/** How the lists answer, where the spec leaves it open (docs/upstream.md). */
export interface ListBehaviour {
  /** Order of GET /orders; default newest first. */
  orders?: "newest-first" | "oldest-first";
  /** Order of GET /bookings; default by date ascending. */
  bookings?: "date-ascending" | "date-descending";
  /** The bookings list's upper date bound: its parameter name (default `to`), and whether it is honoured at all (default yes). */
  bookingsUpperBound?: { name?: string; honoured?: boolean };
}

/** /api/v1: auth, rate limit, fault rules (api-gate.ts), then spec part 4's endpoints. */
export function apiRoutes(deps: ApiGateDeps & { store: SandboxStore; lists?: ListBehaviour }): Hono<ApiEnv> {
  const { store } = deps;
  const lists = deps.lists ?? {};
  const upperName = lists.bookingsUpperBound?.name ?? "to";
  const upperHonoured = lists.bookingsUpperBound?.honoured ?? true;
  const api = new Hono<ApiEnv>();

  api.use("*", apiGate(deps));

  api.get("/orders", (c) => {
    const q = c.req.query();
    const status = oneOf(q.status, ORDER_STATUSES, "status");
    const type = oneOf(q.type, ORDER_TYPES, "type");
    const limit = parseLimit(q.limit);
    const filter = type ? (o: { type: string }) => o.type === type : undefined;
    const query = {
      partition: partitionFor(q.restaurantId, status),
      direction: lists.orders === "oldest-first" ? 1 : -1,
      limit,
      filter,
    } as const;
    return c.json(paginate(store.indexes.orders, query, LIST_KEYS.orders, q.cursor, c.get("fault")));
  });

  api.patch("/orders/:id/status", async (c) => {
    const body = await jsonBody(c);
    if (typeof body.status !== "string") throw new SandboxError(400, "invalid_request", "status is required");
    return c.json(store.actions.updateOrderStatus(c.req.param("id"), body.status));
  });

  api.post("/orders/:id/refund", async (c) => {
    const body = await jsonBody(c);
    return c.json(store.actions.refundOrder(c.req.param("id"), body.reason));
  });

  api.get("/bookings", (c) => {
    const q = c.req.query();
    const from = day(q.from, "from");
    const to = day(q[upperName], upperName);
    const limit = parseLimit(q.limit);
    const query = {
      partition: partitionFor(q.restaurantId, q.status),
      direction: lists.bookings === "date-descending" ? -1 : 1,
      limit,
      // A day bounds every timestamp of that day: "YYYY-MM-DD" ≤ its dates < "YYYY-MM-DD\uffff".
      ...(from ? { lower: [from] } : {}),
      ...(to && upperHonoured ? { upper: [`${to}\uffff`] } : {}),
    } as const;
    return c.json(paginate(store.indexes.bookings, query, LIST_KEYS.bookings, q.cursor, c.get("fault")));
  });

  api.post("/bookings", async (c) => {
    const body = await jsonBody(c);
    const diner = body.diner as { name?: unknown; email?: unknown } | undefined;
    const problems = [
      typeof body.restaurantId !== "string" && "restaurantId",
      (typeof body.date !== "string" || !DAY.test(body.date)) && "date (YYYY-MM-DD)",
      (typeof body.time !== "string" || !/^([01]\d|2[0-3]):[0-5]\d$/.test(body.time)) && "time (HH:MM)",
      (!Number.isInteger(body.partySize) || (body.partySize as number) < 1 || (body.partySize as number) > 50) && "partySize (1..50)",
      (typeof diner?.name !== "string" || typeof diner.email !== "string") && "diner { name, email }",
    ].filter(Boolean);
    if (problems.length > 0) throw new SandboxError(400, "invalid_request", `invalid or missing: ${problems.join(", ")}`);
    const booking = store.actions.createBooking(body as Parameters<SandboxStore["actions"]["createBooking"]>[0]);
    return c.json(booking, 201);
  });

  api.get("/menu-items", (c) => {
    const q = c.req.query();
    const limit = parseLimit(q.limit);
    const query = { partition: partitionFor(q.restaurantId, undefined), direction: 1, limit } as const;
    return c.json(paginate(store.indexes.menuItems, query, LIST_KEYS.menuItems, q.cursor, c.get("fault")));
  });

  api.all("*", () => {
    throw new SandboxError(404, "not_found", "no such endpoint");
  });
  return api;
}
