import { Hono, type Context, type MiddlewareHandler } from "hono";
import { createHash } from "node:crypto";
import type { Logger } from "pino";
import { DEFAULTS } from "../config/defaults.js";
import { MAX_LIMIT } from "../upstream/models.js";
import { API_KEY_PREFIX } from "../base/api-key.js";
import { type Key, type ListIndex, type PageQuery, LIST_KEYS, partitionFor, type SandboxStore } from "./store.js";
import type { StateView } from "./state-file.js";
import { ORDER_STATUSES, ORDER_TYPES, SandboxError } from "./records.js";
import type { WebhookEndpoint } from "./webhook-sender.js";
import { schemeSecretProblem, SIGNATURE_SCHEMES } from "../config/config.js";

/** What the sandbox's HTTP app works on: its store and the parts createSandbox (index.ts) builds around it. */
export interface SandboxParts {
  store: SandboxStore;
  /** Every key the API accepts, metered or not. */
  apiKeys: ReadonlySet<string>;
  /** 0 when the key's request is accepted (and counted), else the Retry-After in seconds (createKeyRateLimit). */
  admit: (key: string) => number;
  faults: ReturnType<typeof createFaults>;
  requestLog: ApiRequestRecord[];
  lists: ListBehaviour | undefined;
  state: StateView;
  addWebhook: (endpoint: WebhookEndpoint) => void;
  silently: <T>(change: () => T) => T;
  logger: Logger | undefined;
}

/** The sandbox's HTTP app: the API under /api/v1, its controls under /_sandbox, errors as the API's. */
export function createSandboxApp(parts: SandboxParts): Hono {
  const app = new Hono();
  app.route("/api/v1", apiRoutes(parts));
  app.route("/_sandbox", controlRoutes(parts));
  app.notFound((c) => errorAnswer(c, noSuchEndpoint()));
  app.onError((err, c) => {
    if (err instanceof SandboxError) return errorAnswer(c, err);
    parts.logger?.error({ err }, "sandbox error");
    return errorAnswer(c, new SandboxError(500, "internal", "internal error"));
  });
  return app;
}

/** A SandboxError as the API answers it: its status and `{ error: { code, message } }`. */
export const errorAnswer = (c: Context, err: SandboxError) => c.json({ error: { code: err.code, message: err.message } }, err.status);

/** The API's answer to a path it does not serve. */
const noSuchEndpoint = () => new SandboxError(404, "not_found", "no such endpoint");

const DAY = /^\d{4}-\d{2}-\d{2}$/;

function oneOf(value: string | undefined, allowed: readonly string[], name: string): string | undefined {
  if (value !== undefined && !allowed.includes(value))
    throw new SandboxError(400, "invalid_request", `${name} must be one of ${allowed.join(", ")}`);
  return value;
}

function day(value: string | undefined, name: string): string | undefined {
  if (value !== undefined && (!DAY.test(value) || Number.isNaN(Date.parse(value))))
    throw new SandboxError(400, "invalid_request", `${name} must be a date YYYY-MM-DD`);
  return value;
}

/** The request's body, a JSON object; else a 400 with `message`. */
async function jsonBody(c: Context, message = "body must be a JSON object"): Promise<Record<string, unknown>> {
  const body: unknown = await c.req.json().catch(() => undefined);
  if (typeof body === "object" && body !== null && !Array.isArray(body)) return body as Record<string, unknown>;
  throw new SandboxError(400, "invalid_request", message);
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

/** /api/v1: auth, rate limit, fault rules (apiGate), then spec part 4's endpoints. */
function apiRoutes(deps: SandboxParts): Hono<ApiEnv> {
  const { store } = deps;
  const lists = deps.lists ?? {};
  // The name the service asks with by default (SYNC_BOOKINGS_UPPER_BOUND_PARAM).
  const upperName = lists.bookingsUpperBound?.name ?? DEFAULTS.syncBookingsUpperBoundParam;
  const upperHonoured = lists.bookingsUpperBound?.honoured ?? true;
  const api = new Hono<ApiEnv>();

  api.use("*", apiGate(deps));
  /** A list endpoint: `pageQuery` checks the request's query (400s) and says which page to read; the cursor picks up from there. */
  const listRoute = <T extends { id: string }>(
    path: string,
    index: ListIndex<T>,
    list: { keyOf: (item: T) => Key; width: number },
    pageQuery: (q: Record<string, string>) => Omit<PageQuery<T>, "after">,
  ) => api.get(path, (c) => c.json(paginate(index, pageQuery(c.req.query()), list, c.req.query("cursor"), c.get("fault"))));

  listRoute("/orders", store.indexes.orders, LIST_KEYS.orders, (q) => {
    const status = oneOf(q.status, ORDER_STATUSES, "status");
    const type = oneOf(q.type, ORDER_TYPES, "type");
    const limit = parseLimit(q.limit);
    const filter = type ? (o: { type: string }) => o.type === type : undefined;
    return { partition: partitionFor(q.restaurantId, status), direction: lists.orders === "oldest-first" ? 1 : -1, limit, filter };
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

  listRoute("/bookings", store.indexes.bookings, LIST_KEYS.bookings, (q) => {
    const from = day(q.from, "from");
    const to = day(q[upperName], upperName);
    const limit = parseLimit(q.limit);
    return {
      partition: partitionFor(q.restaurantId, q.status),
      direction: lists.bookings === "date-descending" ? -1 : 1,
      limit,
      // A day bounds every timestamp of that day: "YYYY-MM-DD" ≤ its dates < "YYYY-MM-DD\uffff".
      ...(from ? { lower: [from] } : {}),
      ...(to && upperHonoured ? { upper: [`${to}\uffff`] } : {}),
    };
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
    return c.json(store.actions.createBooking(body as Parameters<SandboxStore["actions"]["createBooking"]>[0]), 201);
  });

  listRoute("/menu-items", store.indexes.menuItems, LIST_KEYS.menuItems, (q) => ({
    partition: partitionFor(q.restaurantId, undefined),
    direction: 1,
    limit: parseLimit(q.limit),
  }));

  api.all("*", () => {
    throw noSuchEndpoint();
  });
  return api;
}

/** What the request log keeps of an /api/v1 request: its status and key's hash are filled in as it is answered. */
const requestRecord = (c: Context) => ({
  at: Date.now(),
  method: c.req.method,
  path: c.req.path,
  query: new URL(c.req.url).search,
  status: 0,
  keyHash: null as string | null,
  /** The W3C trace context the client sent, if any (a test checks the service's traces reach the API). */
  traceparent: c.req.header("traceparent") ?? null,
});

export type ApiRequestRecord = ReturnType<typeof requestRecord>;

/** The fault matched for a request, for the routes whose answer it changes (repeatCursor). */
export interface ApiEnv {
  Variables: { fault: FaultRule | undefined };
}

/** The API's answer to a missing or unknown key (spec part 5), from one company's app or from the companies' front. */
export const unauthorized = () => new SandboxError(401, "unauthorized", `a valid Authorization: Bearer ${API_KEY_PREFIX}… key is required`);

/** The request's API key: the token of its `Authorization: Bearer …` header, if any. */
export const bearerKey = (authorization: string | undefined) => /^Bearer (\S+)$/.exec(authorization ?? "")?.[1];

const keyHash = (key: string) => createHash("sha256").update(key).digest("hex").slice(0, 12);

/**
 * What every /api/v1 request passes before its route: it is logged, its key checked and metered,
 * and a matching fault rule applied (a delay, an error answer, a padded or stalled body).
 */
function apiGate(deps: SandboxParts): MiddlewareHandler<ApiEnv> {
  const { faults } = deps;
  return async (c, next) => {
    const record = requestRecord(c);
    deps.requestLog.push(record);
    let fault: FaultRule | undefined;
    try {
      const key = bearerKey(c.req.header("authorization"));
      if (key !== undefined) record.keyHash = keyHash(key);
      // Every accepted key starts svc_live_ (createSandbox checks them).
      if (key === undefined || !deps.apiKeys.has(key)) throw unauthorized();
      const retryAfter = deps.admit(key);
      if (retryAfter > 0) {
        c.header("Retry-After", String(retryAfter));
        throw new SandboxError(429, "rate_limited", `rate limit exceeded: ${DEFAULTS.apiRate} requests per minute per key`);
      }
      fault = faults.match(c.req.method, c.req.path, key);
      const delayMs = fault?.delayMs;
      if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
      if (fault?.status) {
        if (fault.status === 429) c.header("Retry-After", String(fault.retryAfterSeconds ?? 1));
        const code = fault.status === 429 ? "rate_limited" : fault.status === 401 || fault.status === 403 ? "unauthorized" : "internal";
        throw new SandboxError(fault.status as 500, code, `injected fault ${fault.status}`);
      }
    } catch (err) {
      const e = err as SandboxError;
      record.status = e.status;
      if (fault?.status && fault.padBodyBytes)
        return paddedBody(
          { head: `{"error":{"code":"${e.code}","message":"${e.message} `, fill: "x", tail: '"}}', bytes: fault.padBodyBytes },
          { status: e.status, headers: c.res.headers },
        );
      return errorAnswer(c, e);
    }
    c.set("fault", fault);
    await next();
    record.status = c.res.status;
    // A success answer: its JSON followed by whitespace up to padBodyBytes.
    if (fault?.padBodyBytes)
      c.res = paddedBody(
        { head: await c.res.text(), fill: " ", tail: "", bytes: fault.padBodyBytes },
        { status: c.res.status, headers: c.res.headers },
      );
    if (fault?.stallBodyMs) c.res = await stallBody(c.res, fault.stallBodyMs);
  };
}

/** `limit` from the query: 1..MAX_LIMIT (the spec's 100), default 50 (docs/upstream.md). */
export function parseLimit(value: string | undefined): number {
  if (value === undefined) return 50;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > MAX_LIMIT)
    throw new SandboxError(400, "invalid_request", `limit must be a whole number from 1 to ${MAX_LIMIT}`);
  return n;
}

/** The cursors of a `cursorCycle` fault: not the list's own (they carry no sort key). */
const CYCLE = "cycle-";

const encodeCursor = (key: Key) => Buffer.from(`v1:${JSON.stringify(key)}`).toString("base64url");

/** The sort key a cursor carries; 400 unless it is one of ours of the list's key width. */
function decodeCursor(cursor: string, width: number): Key {
  try {
    const decoded = Buffer.from(cursor, "base64url").toString("utf8");
    if (!decoded.startsWith("v1:")) throw new Error("version");
    const after = JSON.parse(decoded.slice(3)) as unknown;
    if (!Array.isArray(after) || after.length !== width || !after.every((k) => typeof k === "string" || typeof k === "number"))
      throw new Error("shape");
    return after;
  } catch {
    throw new SandboxError(400, "invalid_request", "cursor is not valid");
  }
}

/**
 * One page of an indexed list. The cursor is opaque to clients: the sort key of the page's last
 * item, found again by binary search, so a page boundary stays valid while items change, arrive
 * or leave. A cursor that does not decode → 400. Faults: `repeatCursor` hands back the request's
 * cursor instead of the next one (on a first page: the cursor after its own last item, even when
 * nothing follows); `pageRecords` answers that many records, the page's own over again;
 * `cursorCycle` answers empty pages whose cursors go round a cycle of that length.
 */
export function paginate<T extends { id: string }>(
  index: ListIndex<T>,
  query: Omit<PageQuery<T>, "after">,
  list: { keyOf: (item: T) => Key; width: number },
  cursor: string | undefined,
  fault: Pick<FaultRule, "repeatCursor" | "pageRecords" | "cursorCycle"> = {},
): { data: T[]; nextCursor: string | null } {
  if (fault.cursorCycle !== undefined) {
    const at = cursor?.startsWith(CYCLE) ? Number(cursor.slice(CYCLE.length)) : -1;
    return { data: [], nextCursor: `${CYCLE}${(at + 1) % fault.cursorCycle}` };
  }
  const { keyOf, width } = list;
  const after = cursor === undefined ? undefined : decodeCursor(cursor, width);
  const { items, more } = index.page({ ...query, ...(after ? { after } : {}) });
  const last = items.at(-1);
  const next = last === undefined ? null : encodeCursor(keyOf(last));
  const data =
    fault.pageRecords === undefined
      ? items
      : Array.from({ length: fault.pageRecords }, (_, i) => items[i % items.length]).filter((item): item is T => item !== undefined);
  if (fault.repeatCursor) return { data, nextCursor: cursor ?? next };
  return { data, nextCursor: more ? next : null };
}

/**
 * /_sandbox: controls for tests, demos and the CLI. Not part of the API: no auth, not rate
 * limited, not in the request log.
 */
function controlRoutes(deps: SandboxParts): Hono {
  const { state } = deps;
  const control = new Hono();
  control.get("/state", (c) =>
    c.json({
      restaurants: state.restaurants(),
      orders: state.orders(),
      bookings: state.bookings(),
      menuItems: state.menuItems(),
      reviews: state.reviews(),
    }),
  );
  control.get("/requests", (c) => c.json(deps.requestLog));
  // Every state the record has had, oldest first: what really happened, to compare with what a
  // mirror observed.
  control.get("/history/:id", (c) => c.json(state.history(c.req.param("id"))));
  control.post("/webhooks", async (c) => {
    const body = (await c.req.json().catch(() => ({}))) as Partial<WebhookEndpoint>;
    if (typeof body.url !== "string" || typeof body.secret !== "string" || !URL.canParse(body.url)) {
      throw new SandboxError(400, "invalid_request", "url (http URL) and secret are required");
    }
    const scheme = body.scheme ?? "svc";
    if (!(SIGNATURE_SCHEMES as readonly string[]).includes(scheme))
      throw new SandboxError(400, "invalid_request", `scheme must be one of ${SIGNATURE_SCHEMES.join(", ")}`);
    const problem = schemeSecretProblem(scheme, body.secret);
    if (problem) throw new SandboxError(400, "invalid_request", `secret: ${problem}`);
    deps.addWebhook({ url: body.url, secret: body.secret, scheme, thin: body.thin === true });
    return c.json({ registered: body.url }, 201);
  });
  control.post("/faults", async (c) => {
    const rule = (await c.req.json().catch(() => ({}))) as FaultRule;
    if (typeof rule.path !== "string") throw new SandboxError(400, "invalid_request", "path is required");
    deps.faults.add(rule);
    return c.json({ added: rule }, 201);
  });
  control.get("/faults", (c) =>
    c.json({ data: deps.faults.list().map(({ apiKey, ...rule }) => (apiKey ? { ...rule, apiKey: "(set)" } : rule)) }),
  );
  control.delete("/faults", (c) => {
    deps.faults.clear();
    return c.body(null, 204);
  });
  // Overwrites fields of a stored record with whatever JSON gives (top level; a nested object is
  // replaced whole), with no checks and no webhook: an upstream that serves a record our mirror may
  // refuse (a NUL in a diner's name, a paidAt that is no timestamp, a date like 2026-02-30).
  control.post("/records/:kind/:id", async (c) => {
    const { store } = deps;
    const kinds = { orders: store.orders, bookings: store.bookings, "menu-items": store.menuItems } as Record<string, Map<string, object>>;
    const kind = c.req.param("kind") as keyof typeof store.relist;
    const map = kinds[kind];
    if (!map) throw new SandboxError(404, "not_found", `kinds are ${Object.keys(kinds).join(", ")}`);
    const record = map.get(c.req.param("id"));
    if (!record) throw new SandboxError(404, "not_found", `no ${kind} record ${c.req.param("id")}`);
    const patch = await jsonBody(c, "the body is a JSON object of the fields to set");
    if ("id" in patch || "restaurantId" in patch) throw new SandboxError(400, "invalid_request", "id and restaurantId cannot be changed");
    Object.assign(record, patch);
    store.relist[kind](record as never);
    return c.json(record);
  });
  control.post("/actions/:name", async (c) => {
    const args = (await c.req.json().catch(() => ({}))) as Record<string, unknown>;
    const a = deps.store.actions;
    const run: Record<string, () => unknown> = {
      createOrder: () => a.createOrder(args),
      updateOrderStatus: () => a.updateOrderStatus(String(args.id), String(args.status)),
      refundOrder: () => a.refundOrder(String(args.id), args.reason),
      createBooking: () => a.createBooking(args as Parameters<typeof a.createBooking>[0]),
      cancelBooking: () => a.cancelBooking(String(args.id)),
      createReview: () => a.createReview(args),
      updateMenuItem: () => a.updateMenuItem(String(args.id), args),
    };
    const action = run[c.req.param("name")];
    if (!action) throw new SandboxError(404, "not_found", `actions are ${Object.keys(run).join(", ")}`);
    // "silent": true makes the change without sending its webhook (a delivery lost for good).
    return c.json(args.silent === true ? deps.silently(action) : action());
  });
  return control;
}

/** Failure injection, as data (like stripe sync-engine's test sandbox). */
export interface FaultRule {
  method?: string;
  /** Prefix of the pathname, e.g. "/api/v1/orders". */
  path: string;
  /** Answer this status with an error body. */
  status?: number;
  /** With status 429: the Retry-After value. */
  retryAfterSeconds?: number;
  /** Wait this long before answering (to exceed a client's timeout). */
  delayMs?: number;
  /**
   * Send the status, the headers and the first bytes of the body at once, then wait this long
   * before the rest: a body that stalls past a client's timeout after the headers arrived.
   */
  stallBodyMs?: number;
  /**
   * A list answers with the cursor the request sent as its nextCursor (a first page: the cursor
   * after its own last item, even when nothing follows): an upstream stuck on one page.
   */
  repeatCursor?: boolean;
  /**
   * A list answers empty pages whose cursors go round a cycle of this many: the first page hands
   * out the cycle's first cursor, each cursor of it the next, the last the first again. A list
   * that never ends without ever handing back the cursor it was sent.
   */
  cursorCycle?: number;
  /** A list answers this many records whatever `limit` asked (its page's records over again). */
  pageRecords?: number;
  /**
   * The answer goes on to this many bytes, generated as it is read (no Content-Length): a success
   * gets whitespace after its JSON (still valid JSON), an error (`status`) a message that long. A
   * page too large to hold, or an error message of megabytes.
   */
  padBodyBytes?: number;
  /**
   * Only requests with this API key (Bearer): with `status: 401`, the API refusing one company's
   * key while the others' still work.
   */
  apiKey?: string;
  /** Applies for this many seconds from when it was added, then expires (an outage of a while). */
  forSeconds?: number;
  /** Skip the first `after` matching requests. */
  after?: number;
  /** Apply to this many matching requests, then expire; unlimited when absent. */
  times?: number;
}

export function createFaults(now: () => number = Date.now) {
  let rules: { rule: FaultRule; seen: number; applied: number; until: number }[] = [];
  return {
    // Arrow properties, not methods: the sandbox hands them out unbound.
    add: (rule: FaultRule) => {
      rules.push({ rule, seen: 0, applied: 0, until: rule.forSeconds === undefined ? Infinity : now() + rule.forSeconds * 1000 });
    },
    clear: () => {
      rules = [];
    },
    /** The rules in force (expired ones left out), as `GET /_sandbox/faults` lists them. */
    list: (): FaultRule[] =>
      rules.filter((e) => e.until > now() && (e.rule.times === undefined || e.applied < e.rule.times)).map((e) => e.rule),
    /** The rule to apply to this request (with the request's key, when it has one), if any (counting it). */
    match(method: string, path: string, key?: string): FaultRule | undefined {
      for (const entry of rules) {
        const { rule } = entry;
        if (rule.method && rule.method.toUpperCase() !== method) continue;
        if (!path.startsWith(rule.path)) continue;
        if (rule.apiKey !== undefined && rule.apiKey !== key) continue;
        if (entry.until <= now()) continue;
        entry.seen++;
        if (entry.seen <= (rule.after ?? 0)) continue;
        if (rule.times !== undefined && entry.applied >= rule.times) continue;
        entry.applied++;
        return rule;
      }
      return undefined;
    },
  };
}

/**
 * The same answer, but only its status, headers and first bytes are sent at once; the rest
 * follows after `ms` (unless the client went away first).
 */
export async function stallBody(res: Response, ms: number): Promise<Response> {
  const bytes = new Uint8Array(await res.arrayBuffer());
  const split = Math.max(1, Math.floor(bytes.length / 2));
  let timer: NodeJS.Timeout | undefined;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(bytes.subarray(0, split));
      timer = setTimeout(() => {
        controller.enqueue(bytes.subarray(split));
        controller.close();
      }, ms);
    },
    cancel() {
      clearTimeout(timer);
    },
  });
  return new Response(body, { status: res.status, headers: res.headers });
}

/**
 * A body of `bytes` bytes: `head`, then `fill` (one ASCII character) over and over, then `tail`,
 * made as the client reads it, so a body of gigabytes costs the sandbox one chunk at a time.
 */
export function paddedBody(parts: { head: string; fill: string; tail: string; bytes: number }, init: ResponseInit): Response {
  const encoder = new TextEncoder();
  const head = encoder.encode(parts.head);
  const tail = encoder.encode(parts.tail);
  const chunk = encoder.encode(parts.fill.repeat(64 * 1024));
  let left = Math.max(0, parts.bytes - head.length - tail.length);
  let started = false;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (!started) {
        started = true;
        controller.enqueue(head);
      } else if (left > 0) {
        const n = Math.min(left, chunk.length);
        controller.enqueue(chunk.subarray(0, n));
        left -= n;
      } else {
        controller.enqueue(tail);
        controller.close();
      }
    },
  });
  const headers = new Headers(init.headers);
  headers.set("content-type", "application/json");
  headers.delete("content-length");
  return new Response(body, { ...init, headers });
}

/**
 * The API's per-key limit (docs/upstream.md): a sliding window over the requests it accepted.
 * Returns 0 when the request is accepted (and counts it), else the Retry-After in seconds.
 */
export function createKeyRateLimit({ max, windowMs }: { max: number; windowMs: number }) {
  const accepted = new Map<string, number[]>();
  return function admit(key: string): number {
    const t = Date.now();
    const log = (accepted.get(key) ?? []).filter((at) => at > t - windowMs);
    accepted.set(key, log);
    if (log.length < max) {
      log.push(t);
      return 0;
    }
    // With max 0 nothing was ever accepted: wait a whole window.
    const oldest = log[0] ?? t;
    return Math.max(1, Math.ceil((oldest + windowMs - t) / 1000));
  };
}
