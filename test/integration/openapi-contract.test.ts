import { randomBytes, randomUUID } from "node:crypto";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it, inject } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { OPENAPI_PATH } from "../../src/http/openapi.js";
import { createLogger } from "../../src/logging/logger.js";
import { createStepStore } from "../../src/mirror/step-store.js";
import { MIRROR_KINDS, type MirrorKind } from "../../src/mirror/kinds.js";
import { createService, type Service } from "../../src/service.js";
import { TEST_SECRET } from "../helpers/edge.js";
import { captureLogs } from "../helpers/log-capture.js";
import { openTestDatabase, preferredDriver, type TestDatabase } from "../helpers/postgres.js";
import { ADMIN_TOKEN } from "../helpers/service.js";

// Issue 54.3: the operator API answers as its OpenAPI document says. A web role on a real
// PostgreSQL and Redis (no worker: what it queues stays queued), seeded so every list and story
// is non-empty; every documented operation is called through the service's own app in memory
// (app.request), and each real answer (status and body) is validated against the document's
// schema for that status with ajv (JSON Schema 2020-12, OpenAPI 3.1's dialect). A route the app
// registers under the operator mount and the document lacks fails the first test.

/** Mounted beside the API but not part of it: the console's pages, the queue dashboard, the webhook edge, the favicon. */
const NOT_API = [/^\/console(\/|$)/, /^\/admin\/queues(\/|$)/, /^\/webhooks(\/|$)/, /^\/favicon\.ico$/];

const AUTH = { authorization: `Bearer ${ADMIN_TOKEN}` };
const prefix = `test-${randomUUID().slice(0, 8)}`;
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;

interface Document {
  paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, unknown> }> }>>;
}

let database: TestDatabase;
let service: Service;
let doc: Document;
let ajv: Ajv2020;
/** Every `method path` (the document's) called, and those answered with one of their success statuses. */
const called = new Set<string>();
const answered = new Set<string>();

const RESTAURANT = "rest_1";
const RECORDS: Record<MirrorKind, Record<string, unknown>> = {
  orders: {
    id: "ord_1",
    restaurantId: RESTAURANT,
    bookingId: null,
    type: "DELIVERY",
    status: "DELIVERED",
    items: [{ id: "item_1", menuItemId: "menu_1", name: "Soup", quantity: 2, price: 5, notes: null }],
    subtotal: 10,
    tax: 1,
    tip: 0,
    total: 11,
    currency: "EUR",
    paidAt: "2026-11-24T05:01:00Z",
    refundedAt: null,
    createdAt: "2026-11-24T05:00:00Z",
  },
  bookings: {
    id: "bkg_1",
    restaurantId: RESTAURANT,
    date: "2026-11-25",
    time: "19:30",
    partySize: 4,
    status: "CONFIRMED",
    confirmCode: "ABC123",
    diner: { name: "Ada", email: "ada@example.com" },
  },
  "menu-items": { id: "menu_1", restaurantId: RESTAURANT, name: "Soup", price: 5, allergens: ["celery"], tags: ["warm"], stock: 12 },
  reviews: { id: "rev_1", restaurantId: RESTAURANT, rating: 5 },
};
/** The event type that names each kind's record. */
const TYPES: Record<MirrorKind, string> = {
  orders: "order.updated",
  bookings: "booking.updated",
  "menu-items": "menu_item.updated",
  reviews: "review.created",
};

const escape = (segment: string) => segment.replace(/~/g, "~0").replace(/\//g, "~1");

/** The document's schema of `status`'s JSON answer to `method path`, compiled; undefined when the document has none. */
function answerSchema(method: string, path: string, status: number): ValidateFunction | undefined {
  const response = doc.paths[path]?.[method]?.responses[String(status)];
  if (!response?.content?.["application/json"]) return undefined;
  return ajv.getSchema(`openapi.json#/paths/${escape(path)}/${method}/responses/${status}/content/application~1json/schema`);
}

/**
 * Calls `method target` (the document's `path`, filled in) through the app and checks the answer
 * against the document: the status is one it lists for the route, the body matches its schema.
 */
async function call(
  method: "get" | "post" | "delete",
  path: string,
  target: string,
  options: { body?: unknown; headers?: Record<string, string>; auth?: boolean } = {},
) {
  const headers: Record<string, string> = { ...(options.auth === false ? {} : AUTH), ...options.headers };
  if (options.body !== undefined) headers["content-type"] ??= "application/json";
  const res = await service.app.request(target, {
    method: method.toUpperCase(),
    headers,
    ...(options.body !== undefined ? { body: typeof options.body === "string" ? options.body : JSON.stringify(options.body) } : {}),
  });
  const documented = doc.paths[path]?.[method]?.responses ?? {};
  const what = `${method.toUpperCase()} ${target} answered ${res.status}`;
  expect(Object.keys(documented), `${what}, which the document does not list for ${method} ${path}`).toContain(String(res.status));
  const type = res.headers.get("content-type") ?? "";
  const text = await res.text();
  called.add(`${method} ${path}`);
  if (res.status < 300) answered.add(`${method} ${path}`);
  const validate = answerSchema(method, path, res.status);
  if (!validate) {
    expect(
      Object.keys(documented[String(res.status)]?.content ?? {}).some((t) => type.startsWith(t)),
      `${what} as ${type}`,
    ).toBe(true);
    return { status: res.status, body: text as unknown };
  }
  expect(type, what).toMatch(/^application\/json/);
  const body = JSON.parse(text) as unknown;
  if (!validate(body)) expect.fail(`${what}, not as the document says: ${ajv.errorsText(validate.errors)}\n${text.slice(0, 2000)}`);
  return { status: res.status, body };
}

async function seed(): Promise<void> {
  const readAt = new Date("2026-11-24T05:10:00Z");
  for (const kind of MIRROR_KINDS) {
    await service.mirror.upsert(kind, [RECORDS[kind] as { id: string; restaurantId: string }], readAt);
    const startedAt = Date.parse("2026-11-24T05:05:00Z");
    await service.eventLog.recordAttempt({
      id: `evt_${kind}`,
      type: TYPES[kind],
      payload: { id: `evt_${kind}`, type: TYPES[kind], data: RECORDS[kind] },
      status: "failed",
      handlers: {
        "user:print": { status: "failed", error: "printer 7 is out of paper", run: { attempt: 1, of: 1, startedAt, durationMs: 12 } },
        "user:notify": { status: "ok", run: { attempt: 1, of: 1, startedAt, durationMs: 3 } },
      },
    });
  }
  const steps = createStepStore(database.db);
  const key = { eventId: "evt_orders", handlerKey: "user:notify", name: "send-mail" };
  await steps.claim(key, 1);
  await steps.complete(key, JSON.stringify({ sent: true }), 4);
}

beforeAll(async () => {
  const config = loadConfig({
    ROLE: "web",
    REDIS_URL: inject("redisUrl"),
    QUEUE_PREFIX: prefix,
    SIGNING_SECRET: TEST_SECRET,
    ADMIN_TOKEN,
    SECRETS_KEY: randomBytes(32).toString("base64"),
    // Configured, never called: no worker runs here to read it.
    API_BASE_URL: "http://127.0.0.1:9/api/v1",
    API_KEY: "svc_live_contract_test_key_0123456789abcdef",
  });
  database = await openTestDatabase(preferredDriver());
  service = await createService({ config, logger: createLogger({ level: "info", destination: captureLogs().stream }), database });
  await seed();
  const served = await service.app.request(OPENAPI_PATH);
  expect(served.status).toBe(200);
  doc = (await served.json()) as Document;
  ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(closed(structuredClone(doc)), "openapi.json");
});
afterAll(async () => {
  await service.stop();
  await database.close();
});

/**
 * The document with its open objects closed: an object schema with properties and no word on
 * others gets `additionalProperties: false`, so an answer carrying a field the document does not
 * name fails here. The document leaves answers open for clients (a newer service may add a
 * field); objects that say `additionalProperties` (a record in the API's own shape keeps fields
 * we do not know) stay as they say.
 */
function closed<T>(schema: T): T {
  if (Array.isArray(schema)) schema.forEach(closed);
  else if (schema !== null && typeof schema === "object") {
    const node = schema as Record<string, unknown>;
    Object.values(node).forEach(closed);
    if (node.type === "object" || (Array.isArray(node.type) && node.type.includes("object")))
      if (node.properties !== undefined && !("additionalProperties" in node)) node.additionalProperties = false;
  }
  return schema;
}

/** The app's routes under the operator mount, as the document writes them (`:id` as `{id}`, each kind's paths apart). */
function appRoutes(): string[] {
  const routes = service.app.routes
    .filter((r) => r.method !== "ALL" && !NOT_API.some((p) => p.test(r.path)))
    .flatMap((r) => (r.path.includes(":kind") ? MIRROR_KINDS.map((k) => ({ ...r, path: r.path.replace(":kind", k) })) : [r]))
    .map((r) => `${r.method.toLowerCase()} ${r.path.replace(/:(\w+)/g, "{$1}")}`);
  return [...new Set(routes)].sort();
}

const documented = () => Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((method) => `${method} ${path}`));

describe("the operator API's document and the app", () => {
  it("documents every route the app registers under the operator mount, and no route it lacks", () => {
    const routes = appRoutes();
    expect(routes.filter((r) => !documented().includes(r))).toEqual([]);
    expect(documented().filter((r) => !routes.includes(r))).toEqual([]);
  });
});

describe("every answer as the document says", () => {
  it("health, readiness and the document, without a token", async () => {
    await call("get", "/healthz", "/healthz", { auth: false });
    await call("get", "/readyz", "/readyz", { auth: false });
    await call("get", OPENAPI_PATH, OPENAPI_PATH, { auth: false });
  });

  it("the event log: a page, one event whole, its refusals", async () => {
    const page = (await call("get", "/events", "/events?order=newest&limit=10")).body as { data: unknown[] };
    expect(page.data).toHaveLength(MIRROR_KINDS.length);
    const event = (await call("get", "/events/{id}", "/events/evt_orders")).body as { handlerAttempts: unknown[]; steps: unknown[] };
    expect(event.handlerAttempts).toHaveLength(2);
    expect(event.steps).toHaveLength(1);
    expect((await call("get", "/events", "/events?colour=red")).status).toBe(400);
    expect((await call("get", "/events/{id}", "/events/evt_nobody_sent")).status).toBe(404);
    expect((await call("get", "/events", "/events", { auth: false })).status).toBe(401);
  });

  it("replays: one event, a bulk replay counted, started, followed and cancelled", async () => {
    const one = await call("post", "/events/{id}/replay", "/events/evt_orders/replay", { body: { handler: "user:print" } });
    expect(one.status).toBe(202);
    expect((await call("post", "/events/{id}/replay", "/events/evt_nobody_sent/replay", { body: {} })).status).toBe(404);
    const filter = { type: "order.*" };
    expect((await call("post", "/events/replay", "/events/replay", { body: { filter, dryRun: true } })).body).toEqual({ count: 1 });
    const started = await call("post", "/events/replay", "/events/replay", { body: { filter } });
    expect(started.status).toBe(202);
    const bulk = (started.body as { id: string }).id;
    await call("get", "/events/replays/{id}", `/events/replays/${bulk}`);
    await call("delete", "/events/replays/{id}", `/events/replays/${bulk}`);
    expect((await call("get", "/events/replays/{id}", "/events/replays/bulk-unknown")).status).toBe(404);
    expect((await call("post", "/events/replay", "/events/replay", { body: {} })).status).toBe(400);
    // The guards of every write: another origin (403), a body that is not JSON (415).
    const origin = { origin: "https://elsewhere.example" };
    expect((await call("post", "/events/replay", "/events/replay", { body: { filter }, headers: origin })).status).toBe(403);
    const text = { "content-type": "text/plain" };
    expect((await call("post", "/events/replay", "/events/replay", { body: "{}", headers: text })).status).toBe(415);
  });

  it("sync requests", async () => {
    expect((await call("post", "/sync/reconcile", "/sync/reconcile", { body: {} })).status).toBe(202);
    expect((await call("post", "/sync/backfill", "/sync/backfill", { body: { kinds: ["orders"], since: "2026-11-01" } })).status).toBe(202);
    expect((await call("post", "/sync/backfill", "/sync/backfill?account=nobody", { body: {} })).status).toBe(404);
  });

  it.each(MIRROR_KINDS)("the mirror's %s and their records' stories", async (kind) => {
    const { id } = RECORDS[kind] as { id: string };
    const page = (await call("get", `/mirror/${kind}`, `/mirror/${kind}?restaurantId=${RESTAURANT}`)).body as { data: unknown[] };
    expect(page.data).toHaveLength(1);
    await call("get", `/mirror/${kind}/{id}`, `/mirror/${kind}/${id}`);
    expect((await call("get", `/mirror/${kind}/{id}`, `/mirror/${kind}/nothing_here`)).status).toBe(404);
    const story = (await call("get", `/records/${kind}/{id}`, `/records/${kind}/${id}`)).body as { timeline: unknown[] };
    expect(story.timeline).toHaveLength(1);
    expect((await call("get", `/records/${kind}/{id}`, `/records/${kind}/nothing_here`)).status).toBe(404);
    const refresh = await call("post", `/records/${kind}/{id}/refresh`, `/records/${kind}/${id}/refresh`, { body: {} });
    // Reviews have no endpoint to read them again.
    expect(refresh.status).toBe(kind === "reviews" ? 400 : 202);
  });

  it("accounts: add, list, health, rotate, remove, and their refusals", async () => {
    const acme = { id: "acme", apiKey: "svc_live_acme_key_0123456789abcdef", signingSecret: "acme-signing-secret-0123" };
    expect((await call("post", "/accounts", "/accounts", { body: acme })).status).toBe(201);
    expect((await call("post", "/accounts", "/accounts", { body: acme })).status).toBe(409);
    expect((await call("post", "/accounts", "/accounts", { body: { ...acme, id: "Not A Slug" } })).status).toBe(400);
    const list = (await call("get", "/accounts", "/accounts")).body as { data: unknown[] };
    expect(list.data).toHaveLength(1);
    await call("get", "/accounts/{id}", "/accounts/acme");
    expect((await call("get", "/accounts/{id}", "/accounts/nobody")).status).toBe(404);
    const rotation = { signingSecret: "acme-signing-secret-4567" };
    expect((await call("post", "/accounts/{id}/rotate", "/accounts/acme/rotate", { body: rotation })).status).toBe(200);
    expect((await call("delete", "/accounts/{id}", "/accounts/acme?purge=maybe")).status).toBe(400);
    expect((await call("delete", "/accounts/{id}", "/accounts/acme?purge=true")).status).toBe(200);
    expect((await call("delete", "/accounts/{id}", "/accounts/acme")).status).toBe(404);
  });

  it("problems: the open ones, every state, one account's, and a refusal", async () => {
    service.problems.report({ account: null, kind: "upstream_unreachable", subject: "api.example", cause: "GET /api/v1/orders failed" });
    await service.problems.settled();
    const open = (await call("get", "/problems", "/problems")).body as { data: { subject: string }[] };
    expect(open.data.map((p) => p.subject)).toContain("api.example");
    await call("get", "/problems", "/problems?state=all&kind=upstream_unreachable");
    expect((await call("get", "/problems", "/problems?account=acme")).status).toBe(200);
    expect((await call("get", "/problems", "/problems?state=maybe")).status).toBe(400);
  });

  it("metrics, as Prometheus text", async () => {
    const metrics = await call("get", "/metrics", "/metrics");
    expect(metrics.status).toBe(200);
    expect(metrics.body).toContain("# HELP");
  });

  it("called every documented route, and got a success from each that documents one", () => {
    const succeeds = (r: string) => {
      const [method = "", path = ""] = r.split(" ");
      return Object.keys(doc.paths[path]?.[method]?.responses ?? {}).some((status) => status.startsWith("2"));
    };
    expect(documented().filter((r) => !called.has(r))).toEqual([]);
    expect(documented().filter((r) => succeeds(r) && !answered.has(r))).toEqual([]);
  });
});
