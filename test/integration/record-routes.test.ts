import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, it, inject } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { createLogger } from "../../src/logging/logger.js";
import { SYNC_QUEUE } from "../../src/queue/events-queue.js";
import { createRedisConnection, type RedisClient, redisKeys } from "../../src/redis/redis.js";
import { createService, type Service } from "../../src/service.js";
import { TEST_SECRET } from "../helpers/edge.js";
import { captureLogs } from "../helpers/log-capture.js";
import { openTestDatabase, preferredDriver, type TestDatabase } from "../helpers/postgres.js";
import { ADMIN_TOKEN } from "../helpers/service.js";

// Issue 34: the operator's routes to a record's story (GET /records/{kind}/{id}, its console page,
// the header search, refresh now) and failures by fingerprint, through the service's own app in
// memory (app.request): a web role on a real database and Redis, no worker, no listener.

const AUTH = { authorization: `Bearer ${ADMIN_TOKEN}` };
const prefix = `test-${randomUUID().slice(0, 8)}`;
let database: TestDatabase;
let service: Service;
let redis: RedisClient;

const request = (path: string, init: RequestInit = {}) =>
  service.app.request(path, { ...init, headers: { ...AUTH, ...(init.headers as Record<string, string> | undefined) } });
const post = (path: string, body: unknown = {}) =>
  request(path, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });

const order = (status: string) => ({
  id: "ord_refunded1",
  restaurantId: "rest_1",
  bookingId: null,
  type: "DELIVERY",
  status,
  items: [],
  subtotal: 10,
  tax: 1,
  tip: 0,
  total: 11,
  currency: "EUR",
  paidAt: null,
  refundedAt: null,
  createdAt: "2026-11-24T05:00:00Z",
});

beforeAll(async () => {
  const config = loadConfig({
    ROLE: "web",
    REDIS_URL: inject("redisUrl"),
    QUEUE_PREFIX: prefix,
    SIGNING_SECRET: TEST_SECRET,
    ADMIN_TOKEN,
    // Configured, never called: no worker runs here to read it.
    API_BASE_URL: "http://127.0.0.1:9/api/v1",
    API_KEY: "svc_live_routes_test_key_0123456789abcdef",
  });
  database = await openTestDatabase(preferredDriver());
  const logs = captureLogs();
  service = await createService({ config, logger: createLogger({ level: "info", destination: logs.stream }), database });
  redis = createRedisConnection(config.redisUrl, "worker", { cluster: config.redisCluster });

  await service.mirror.upsert("orders", [order("DELIVERED")], new Date("2026-11-24T05:10:00Z"));
  const { eventLog } = service;
  await eventLog.recordAttempt({
    id: "evt_refund_ord",
    type: "order.refunded",
    payload: { data: { id: "ord_refunded1", restaurantId: "rest_1" } },
    status: "handled",
    handlers: { sync: { status: "ok" } },
  });
  await eventLog.recordAttempt({
    id: "chg_ord_1",
    type: "change.order",
    payload: {
      id: "chg_ord_1",
      type: "change.order",
      data: {
        kind: "order",
        id: "ord_refunded1",
        restaurantId: "rest_1",
        before: order("PENDING"),
        after: order("DELIVERED"),
        changed: ["status"],
        source: "reconcile",
      },
    },
    status: "handled",
    handlers: {},
  });
  await eventLog.recordAttempt({
    id: "evt_review",
    type: "review.created",
    payload: { data: { id: "rev_1", restaurantId: "rest_1" } },
    status: "handled",
    handlers: {},
  });
  // One bug, three orders; another bug once.
  for (const id of ["ord_a1b2c3d4", "ord_e5f6g7h8", "ord_i9j0k1l2"])
    await eventLog.recordAttempt({
      id: `evt_fail_${id}`,
      type: "order.created",
      payload: { data: { id, restaurantId: "rest_1" } },
      status: "failed",
      handlers: { print: { status: "failed", error: `order ${id} has no kitchen <b>ticket</b>` } },
    });
  await eventLog.recordAttempt({
    id: "evt_fail_other",
    type: "order.created",
    payload: {},
    status: "failed",
    handlers: { print: { status: "failed", error: "paper jam" } },
  });
});
afterAll(async () => {
  await service.stop();
  await redis.quit();
  await database.close();
});

describe("GET /records/{kind}/{id}", () => {
  it("answers 401 without the token", async () => {
    const res = await service.app.request("/records/orders/ord_refunded1");
    expect(res.status).toBe(401);
  });

  it("answers the mirror's copy and the timeline, newest first, a change as a field diff", async () => {
    const res = await request("/records/orders/ord_refunded1");
    expect(res.status).toBe(200);
    const story = (await res.json()) as {
      record: { data: { status: string }; readAt: string; lastChange: { source: string } };
      timeline: { entry: string; eventId: string; diff?: unknown }[];
      nextCursor: string | null;
    };
    expect(story.record.data.status).toBe("DELIVERED");
    expect(story.record.readAt).toBe("2026-11-24T05:10:00.000Z");
    expect(story.record.lastChange.source).toBe("reconcile");
    expect(story.timeline.map((e) => [e.entry, e.eventId])).toEqual([
      ["change", "chg_ord_1"],
      ["delivery", "evt_refund_ord"],
    ]);
    expect(story.timeline[0]!.diff).toEqual([{ field: "status", before: "PENDING", after: "DELIVERED" }]);
    expect(story.nextCursor).toBeNull();
  });

  it("refuses an unknown kind, an unknown record, a bad cursor and an unknown parameter, each with its reason", async () => {
    const cases: [string, number, string][] = [
      ["/records/invoices/x", 404, "not_found"],
      ["/records/orders/ord_nowhere", 404, "not_found"],
      ["/records/orders/ord_refunded1?cursor=%25%25", 400, "invalid_filter"],
      ["/records/orders/ord_refunded1?limit=5", 400, "invalid_filter"],
      ["/records/orders/bad%00id", 400, "invalid_filter"],
    ];
    for (const [path, status, code] of cases) {
      const res = await request(path);
      expect(res.status, path).toBe(status);
      expect(((await res.json()) as { error: { code: string } }).error.code, path).toBe(code);
    }
  });
});

describe("POST /records/{kind}/{id}/refresh", () => {
  it("notes the id where events note theirs and queues the kind's refresh job", async () => {
    const res = await post("/records/orders/ord_refunded1/refresh");
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ kind: "orders", id: "ord_refunded1", restaurantId: "rest_1" });
    const pending = await redis.hgetall(redisKeys(prefix).syncOf().pendingRefresh("orders"));
    expect(Object.keys(pending)).toEqual([JSON.stringify(["rest_1", "ord_refunded1"])]);
    const queue = new Queue(SYNC_QUEUE, { connection: redis, prefix });
    try {
      const jobs = await queue.getJobs(["waiting", "delayed"]);
      expect(jobs.map((j): [string, unknown] => [j.name, (j.data as { kind?: string }).kind])).toContainEqual(["refresh", "orders"]);
    } finally {
      await queue.close();
    }
  });

  it("refuses a cross-site request (the operator routes' CSRF rule)", async () => {
    const res = await request("/records/orders/ord_refunded1/refresh", {
      method: "POST",
      body: "{}",
      headers: { "content-type": "application/json", "sec-fetch-site": "cross-site" },
    });
    expect(res.status).toBe(403);
  });

  it("refuses a kind the API does not serve and a record nothing names, changing nothing", async () => {
    const review = await post("/records/reviews/rev_1/refresh");
    expect(review.status).toBe(400);
    expect(((await review.json()) as { error: { message: string } }).error.message).toContain("reviews are stored as delivered");
    expect(await redis.exists(redisKeys(prefix).syncOf().pendingRefresh("reviews"))).toBe(0);
    const unknown = await post("/records/orders/ord_nowhere/refresh");
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe("record_not_found");
    expect((await redis.hkeys(redisKeys(prefix).syncOf().pendingRefresh("orders"))).filter((f) => f.includes("ord_nowhere"))).toEqual([]);
  });
});

describe("the console's record page and search", () => {
  it("opens an order's story from its id in the search, an event's page from an event id, and says when neither knows it", async () => {
    const toRecord = await request("/console/events?id=ord_refunded1");
    expect(toRecord.status).toBe(302);
    expect(toRecord.headers.get("location")).toBe("/console/records/orders/ord_refunded1");
    const toEvent = await request("/console/events?id=evt_refund_ord");
    expect(toEvent.headers.get("location")).toBe("/console/events/evt_refund_ord");
    const nowhere = await request("/console/events?id=ord_nowhere");
    expect(nowhere.status).toBe(404);
    expect(await nowhere.text()).toContain("No event, order, booking, menu item or review with id ord_nowhere");
  });

  it("renders the story with its refresh button, and the mirror's rows and an event's changes link to it", async () => {
    const page = await request("/console/records/orders/ord_refunded1");
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('data-refresh-record="orders"');
    expect(html).toContain("chg_ord_1");
    expect(html).toContain("evt_refund_ord");
    expect(html).toMatch(/<span class="mono">status<\/span>: <span class="muted">PENDING<\/span> → DELIVERED/);
    // The mirror's row and an event's change both link to the story.
    expect(await (await request("/console/mirror/orders")).text()).toContain('href="/console/records/orders/ord_refunded1"');
    expect(await (await request("/console/events/evt_refund_ord")).text()).toContain('href="/console/records/orders/ord_refunded1"');
    expect((await request("/console/records/orders/ord_nowhere")).status).toBe(404);
  });
});

describe("failures by fingerprint", () => {
  it("shows one group for one bug naming three orders, escaped, and its dry run counts exactly that group", async () => {
    const html = await (await request("/console/failures?range=7d")).text();
    expect(html).toContain("order ord_&lt;id&gt; has no kitchen &lt;b&gt;ticket&lt;/b&gt;");
    expect(html).not.toContain("<b>ticket</b>");
    const filter = { status: "failed", handler: "print", fingerprint: "order ord_<id> has no kitchen <b>ticket</b>" };
    const dry = await post("/events/replay", { filter, dryRun: true });
    expect(dry.status).toBe(200);
    expect(await dry.json()).toEqual({ count: 3 });
    const bad = await post("/events/replay", { filter: { fingerprint: "x" }, dryRun: true });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toContain("fingerprint needs handler");
  });
});
