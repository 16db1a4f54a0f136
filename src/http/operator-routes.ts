import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { HonoAdapter } from "@bull-board/hono";
import { serveStatic } from "@hono/node-server/serve-static";
import type { Queue } from "bullmq";
import { Hono, type Context, type MiddlewareHandler } from "hono";
import type { Logger } from "pino";
import * as z from "zod";
import { EventIdentifierError } from "../events/envelope.js";
import type { RecordStory } from "../mirror/record-story.js";
import type { AccountRegistry } from "../mirror/accounts.js";
import type { OperatorActions } from "../worker/operator-actions.js";
import { idProblem, printable } from "../base/text.js";
import { errorBody, InvalidRequestError } from "./errors.js";
import { operatorGuards } from "./guards.js";
import { ProblemList, ProblemsQuery, ReplayManyBody, ReplayOneBody, SyncBodies } from "./operator-schemas.js";
import { quietRequest, type AppEnv } from "./request-log.js";
import type { Problem } from "../problems/problem.js";

// The operator surface behind the admin token: the event log's reads, the write API (replays,
// reconcile, backfill), the mirror's and the records' reads, the metrics, the queue dashboard
// and the favicon; and the answer when no token is configured at all.

/** Where the console's pages are (console/console-routes.tsx mounts them; every link to them starts here). */
export const CONSOLE_PATH = "/console";
/** Prometheus text of the service's registry: the route and every link to it. */
export const METRICS_PATH = "/metrics";

export interface OperatorRoutesOptions {
  adminToken: string;
  mirror: MirrorReader;
  events: EventLogReader;
  /** Prometheus text of the service's registry. */
  metrics: () => Promise<{ contentType: string; body: string }>;
  /** The queues the dashboard shows. */
  queues: readonly Queue[];
  /** The write API (replays, reconcile, backfill) and the logger its audit lines go to. */
  actions?: { port: OperatorActionsPort; logger: Logger };
  /** A record's story and "refresh it now" (GET /records/{kind}/{id}, POST …/refresh). */
  records?: RecordReader;
  /** The accounts registry (GET/POST /accounts, POST /accounts/{id}/rotate, DELETE /accounts/{id}). */
  accounts?: AccountsPort;
  /** The problems (GET /problems). */
  problems?: ProblemsReader;
}

/**
 * Mounts the operator surface: /mirror, /events, /metrics and the /admin/queues dashboard. Framing
 * is denied on every answer; the token is checked first (a 401 tells nothing more), then the
 * cross-site check, so a page the operator visits cannot act with their credentials.
 */
export function mountOperatorRoutes(app: Hono<AppEnv>, options: OperatorRoutesOptions): void {
  const guard = operatorGuards(options.adminToken);
  // A scraper's pulls and the dashboard's static files: debug lines while they succeed.
  for (const path of [METRICS_PATH, `${DASHBOARD_PATH}/static/*`, FAVICON_PATH]) app.use(path, quietRequest);
  // "/x/*" matches "/x" itself too.
  for (const path of ["/mirror/*", "/events/*", METRICS_PATH, "/sync/*", "/records/*", "/accounts/*", "/problems/*", `${DASHBOARD_PATH}/*`])
    app.use(path, ...guard);
  app.route("/mirror", mirrorRoutes(options.mirror));
  // Before the event log's routes: /events/replay and /events/replays/{id} are not event ids.
  if (options.actions) app.route("/", operatorActionRoutes(options.actions.port, options.actions.logger));
  app.route("/events", eventRoutes(options.events));
  if (options.records) app.route("/records", recordRoutes(options.records));
  if (options.accounts && options.actions) app.route("/accounts", accountRoutes(options.accounts, options.actions.logger));
  if (options.problems) app.route("/problems", problemRoutes(options.problems));
  app.get(METRICS_PATH, async (c) => {
    const { contentType, body } = await options.metrics();
    return c.body(body, 200, { "Content-Type": contentType });
  });
  app.route(DASHBOARD_PATH, dashboardRoutes(options.queues));
  app.get(FAVICON_PATH, favicon);
}

/** Without ADMIN_TOKEN the console and the operator API are off: /console says so, instead of "no route". */
export function mountOperatorOff(root: Hono<AppEnv>): void {
  const off = (c: Context<AppEnv>) =>
    c.text("The console and the operator API are off: ADMIN_TOKEN is not set on this service. Set it (16+ characters) and restart.\n", 404);
  // "/console/*" matches "/console" itself too.
  root.all(`${CONSOLE_PATH}/*`, off);
}

/**
 * The `:id` of an operator route, refused `400 invalid_event_id` when it cannot be an event id
 * (the id rule, mirror/values.ts, which the edge applies too: over 200 characters, control
 * characters, "." or "..", which a route only sees when a client skipped URL normalisation). The
 * event log is not asked.
 */
export function eventIdParam(c: Context): string {
  const id = c.req.param("id");
  if (id === undefined || idProblem(id) !== undefined) throw new EventIdentifierError("id");
  return id;
}

/** One page of a list the operator API answers: its items, and the cursor of the next page (null: none). */
interface ListPage {
  data: unknown[];
  nextCursor: string | null;
}

/**
 * What the event-log routes read; the service wires the event log in (http never imports it). The
 * console reads the same, typed as the log's own event and page (`Event`, `Page`).
 */
export interface EventLogReader<Event = unknown, Page = ListPage> {
  /** `account`: the `?account=` of the request (the reader checks it; none: default); undefined when the log holds no such event. */
  get(id: string, account?: string): Promise<Event | undefined>;
  /** One page of the log filtered by the query's parameters (`account` among them); a bad one throws a coded error (400). */
  query(query: Record<string, string>): Promise<Page>;
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
    return jsonOrNotFound(c, await log.get(id, c.req.query("account")), `no event ${id} in the event log`);
  });
  return route;
}

/** `found` as JSON, or a 404 `not_found` saying what is missing when it is undefined. */
const jsonOrNotFound = (c: Context, found: unknown, missing: string) =>
  found === undefined ? c.json(errorBody("not_found", missing), 404) : c.json(found);

/** What a `:kind` not among `kinds` is told: "mirror kinds are orders, …" (the console's pages say it as a sentence). */
export const kindsAre = (noun: string, kinds: readonly string[]) => `${noun} kinds are ${kinds.join(", ")}`;

/** Refuses a `:kind` not among `kinds` with a 404 naming them ("mirror kinds are orders, …"). */
function knownKind(kinds: readonly string[], noun: string): MiddlewareHandler<AppEnv> {
  return async function knownKind(c, next) {
    if (!kinds.includes(c.req.param("kind") ?? "")) return c.json(errorBody("not_found", kindsAre(noun, kinds)), 404);
    await next();
  };
}

/** What the mirror routes read; the service wires the mirror store in (http never imports it). */
export interface MirrorReader {
  /** The kinds it keeps (the mirror's MIRROR_KINDS). */
  kinds: readonly string[];
  /** `account`: the `?account=` of the request (the reader checks it; none: default). */
  get(kind: string, id: string, account?: string): Promise<unknown>;
  /** One page of a kind, filtered by the query's parameters (`account` among them); a bad one throws a coded error (400). */
  list(kind: string, query: Record<string, string>): Promise<ListPage>;
}

/**
 * GET /mirror/{kind}?restaurantId=&status=&from=&to=&limit=&cursor= and GET /mirror/{kind}/{id},
 * read from SQL, for operators (mounted behind the admin token by the caller).
 */
function mirrorRoutes(mirror: MirrorReader): Hono<AppEnv> {
  const route = new Hono<AppEnv>();
  // Runs for "/:kind" too ("/:kind/*" matches it).
  route.use("/:kind/*", knownKind(mirror.kinds, "mirror"));
  route.get("/:kind", async (c) => c.json(await mirror.list(c.req.param("kind"), c.req.query())));
  route.get("/:kind/:id", async (c) => {
    const { kind, id } = c.req.param();
    return jsonOrNotFound(c, await mirror.get(kind, id, c.req.query("account")), `no ${kind} record ${printable(id)} in the mirror`);
  });
  return route;
}

/** What the record routes read and ask; the service wires the record story and the operator actions in (http imports only the story's type). */
export interface RecordReader {
  /** The mirror's kinds (orders, bookings, menu-items, reviews). */
  kinds: readonly string[];
  /** The record's story; undefined when the service holds nothing of it. A bad id or cursor throws invalid_filter. */
  story(kind: string, id: string, cursor?: string, account?: string): Promise<RecordStory | undefined>;
  /** Asks for a narrow read of the record (the refresh its events would schedule); throws a coded error when it cannot. */
  refresh(kind: string, id: string, account?: string): Promise<{ kind: string; id: string; restaurantId: string }>;
}

/** A record the service holds nothing of (GET /records/{kind}/{id}; the console's record page says it as a sentence). */
export const unknownRecord = (kind: string, id: string) =>
  `no ${kind} record ${printable(id)}: neither the mirror nor the event log knows it`;

/**
 * GET /records/{kind}/{id}?cursor= (the record and everything the log says of it, newest first)
 * and POST /records/{kind}/{id}/refresh (read it from the API now), for operators: mounted
 * behind the admin token and the same-origin check by the caller.
 */
function recordRoutes(records: RecordReader): Hono<AppEnv> {
  const route = new Hono<AppEnv>();
  route.use("/:kind/*", knownKind(records.kinds, "record"));
  route.get("/:kind/:id", async (c) => {
    const { cursor, account, ...unknown } = c.req.query();
    const extra = Object.keys(unknown)[0];
    if (extra !== undefined)
      return c.json(errorBody("invalid_filter", `unknown parameter ${extra}; this route takes cursor and account`), 400);
    const { kind, id } = c.req.param();
    return jsonOrNotFound(c, await records.story(kind, id, cursor, account), unknownRecord(kind, id));
  });
  route.post("/:kind/:id/refresh", async (c) =>
    c.json(await records.refresh(c.req.param("kind"), c.req.param("id"), c.req.query("account")), 202),
  );
  return route;
}

/**
 * What the operator's write routes call: the service wires worker/operator-actions.ts in (http
 * imports only its type). `account` in each: the `?account=` of the request (checked by the
 * actions; none: default).
 */
export interface OperatorActionsPort extends Pick<OperatorActions, "replayMatching" | "bulkProgress" | "cancelBulkReplay" | "requestSync"> {
  /** As the actions' own, its options always given. */
  replayEvent(id: string, options: NonNullable<Parameters<OperatorActions["replayEvent"]>[1]>): ReturnType<OperatorActions["replayEvent"]>;
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

/** An operator action's one audit line: who, the route, its target and, when it counts events, how many. */
function auditLine(logger: Logger) {
  return (action: string, target: unknown, count?: number) =>
    logger.info({ who: "admin", route: action, target, ...(count !== undefined ? { count } : {}) }, "operator action");
}

/**
 * The operator's write API (the console's buttons and the CLI use it): replay one event or a
 * filtered set, follow a bulk replay, ask for a reconciliation or a backfill. Mounted behind the
 * admin token and the same-origin check; every call is one audit line (who, route, target, count).
 */
export function operatorActionRoutes(actions: OperatorActionsPort, logger: Logger): Hono<AppEnv> {
  const route = new Hono<AppEnv>();
  const audit = auditLine(logger);

  route.post("/events/replay", async (c) => {
    const { filter = {}, dryRun, fresh, confirm } = await body(c, ReplayManyBody);
    const account = c.req.query("account");
    const result = await actions.replayMatching({
      filter,
      dryRun: dryRun ?? false,
      fresh: fresh ?? false,
      confirm,
      account,
      ...idempotencyKey(c),
    });
    // An absent account or bulk id is left out of the line (as JSON leaves out an undefined field).
    audit(dryRun ? "POST /events/replay (dry run)" : "POST /events/replay", { filter, account, bulk: result.id }, result.count);
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
    const { handler } = await body(c, ReplayOneBody);
    const account = c.req.query("account");
    // An empty `?account=` is default's, as none.
    const named = account ? { account } : {};
    const result = await actions.replayEvent(id, { handler, ...idempotencyKey(c), ...named });
    audit("POST /events/:id/replay", { event: result.event, replay: result.replay.id, handler: handler ?? "*", ...named }, 1);
    return c.json(result, 202);
  });
  for (const request of ["reconcile", "backfill"] as const)
    route.post(`/sync/${request}`, async (c) => {
      // The schema's answer is what the action takes (checked here, where both are known).
      const schema: z.ZodType<Parameters<OperatorActionsPort["requestSync"]>[1]> = SyncBodies[request];
      const options = { ...(await body(c, schema)), account: c.req.query("account") };
      const result = await actions.requestSync(request, options);
      audit(`POST /sync/${request}`, { job: result.job, ...options });
      return c.json(result, 202);
    });
  route.all("/sync/*", (c) => c.json(errorBody("not_found", "sync routes: POST /sync/reconcile, POST /sync/backfill"), 404));
  return route;
}

/** The accounts registry as the routes use it (mirror/accounts.ts; the service wires it in). */
export interface AccountsPort extends Pick<AccountRegistry, "add" | "list" | "rotate" | "remove"> {
  /** One account with its health (sync state, budget, pending refreshes); throws account_not_found. */
  health(id: string): Promise<{ id: string }>;
}

/**
 * The registered companies: add (201; a duplicate id 409; a malformed field 400 naming it), list
 * (never a key or a secret), rotate a signing secret or replace the key, remove (its endpoint and
 * sync stop at once; `?purge=true` deletes its rows, events and steps too). One audit line each,
 * naming the account, never a value.
 */
function accountRoutes(accounts: AccountsPort, logger: Logger): Hono<AppEnv> {
  const route = new Hono<AppEnv>();
  const audit = auditLine(logger);
  route.get("/", async (c) => c.json({ data: await accounts.list() }));
  route.get("/:id", async (c) => c.json(await accounts.health(c.req.param("id"))));
  route.post("/", async (c) => {
    const added = await accounts.add(await body(c, z.unknown()));
    audit("POST /accounts", { account: added.id });
    return c.json(added, 201);
  });
  route.post("/:id/rotate", async (c) => {
    const input = await body(c, z.record(z.string(), z.unknown()));
    const rotated = await accounts.rotate(c.req.param("id"), input);
    audit("POST /accounts/:id/rotate", { account: rotated.id, fields: Object.keys(input) });
    return c.json(rotated);
  });
  route.delete("/:id", async (c) => {
    const purgeParam = c.req.query("purge");
    if (purgeParam !== undefined && purgeParam !== "true" && purgeParam !== "false")
      throw new InvalidRequestError(`purge takes true or false, not "${printable(purgeParam)}"`);
    const id = c.req.param("id");
    await accounts.remove(id, { purge: purgeParam === "true" });
    audit("DELETE /accounts/:id", { account: id, purge: purgeParam === "true" });
    return c.json({ id, removed: true, purged: purgeParam === "true" });
  });
  return route;
}

export const DASHBOARD_PATH = "/admin/queues";

// A <link> to another host (bull-board's page links Google Fonts, and has no option to drop it).
const EXTERNAL_LINK = /<link\b[^>]*\bhref="(?:https?:)?\/\/[^"]*"[^>]*>\s*/gi;

/**
 * Drops the links to other hosts from the dashboard's HTML: an operator's page loads nothing
 * from elsewhere (the fonts fall back to the system's). Its own assets are untouched.
 */
function onlyOwnHost(): MiddlewareHandler {
  return async function dropExternalLinks(c, next) {
    await next();
    if (!(c.res.headers.get("content-type") ?? "").startsWith("text/html")) return;
    const html = (await c.res.text()).replace(EXTERNAL_LINK, "");
    const headers = new Headers(c.res.headers);
    headers.delete("content-length");
    c.res = new Response(html, { status: c.res.status, headers });
  };
}

/** bull-board's queue dashboard as Hono routes (the caller puts the admin token in front). */
function dashboardRoutes(queues: readonly Queue[]): Hono {
  const adapter = new HonoAdapter(serveStatic);
  adapter.setBasePath(DASHBOARD_PATH);
  createBullBoard({
    queues: queues.map((q) => new BullMQAdapter(q)),
    serverAdapter: adapter,
    options: {
      uiConfig: {
        boardTitle: "svc-webhooks",
        // The event log and the mirror sit beside the queues (same admin token).
        miscLinks: [
          { text: "Console", url: CONSOLE_PATH },
          { text: "Event log", url: "/events" },
          { text: "Failed events", url: "/events?status=failed" },
          { text: "Mirror: orders", url: "/mirror/orders" },
          { text: "Metrics", url: METRICS_PATH },
        ],
      },
    },
  });
  const routes = new Hono();
  routes.use("*", onlyOwnHost());
  routes.route("/", adapter.registerPlugin());
  return routes;
}

export const FAVICON_PATH = "/favicon.ico";

// A small mark (a hook: webhooks) drawn inline, so no build step makes it and no other host serves it.
const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1f6feb"/><path d="M20 7v11a6 6 0 0 1-12 0v-2" fill="none" stroke="#fff" stroke-width="3" stroke-linecap="round"/><circle cx="20" cy="7" r="2.5" fill="#fff"/></svg>`;

/**
 * The favicon, as SVG (browsers read the type from Content-Type, not the name): asked for by
 * every browser at /favicon.ico, and linked from the console's pages. Public: it says nothing.
 */
export function favicon(c: Context): Response {
  return c.body(FAVICON_SVG, 200, { "Content-Type": "image/svg+xml", "Cache-Control": "public, max-age=86400" });
}

/** What the problems route reads; the service wires the problem store in. */
export interface ProblemsReader {
  list(query: z.infer<typeof ProblemsQuery>): Promise<Problem[]>;
}

/** GET /problems?state=open|resolved|all&account=&kind=: every reason the mirror or a handler cannot be right. */
function problemRoutes(problems: ProblemsReader): Hono<AppEnv> {
  const route = new Hono<AppEnv>();
  route.get("/", async (c) => {
    const parsed = ProblemsQuery.safeParse(c.req.query());
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const path = issue?.path.join(".") ?? "";
      const field = path !== "" ? path : issue?.code === "unrecognized_keys" ? issue.keys.join(", ") : "query";
      throw new InvalidRequestError(`${field}: ${issue?.message ?? "invalid"}`);
    }
    return c.json({ data: await problems.list(parsed.data) } satisfies z.infer<typeof ProblemList>);
  });
  return route;
}
