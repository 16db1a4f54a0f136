import { createServer, type Server } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { verifySignature } from "../../src/events/envelope.js";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";

let sandbox: Sandbox;
// Every sandbox opened, closed after each test (one that failed before opening any leaves none).
let opened: Sandbox[] = [];
let url: string;
let receiver: Server | undefined;
afterEach(async () => {
  await Promise.all(opened.map((s) => s.close()));
  opened = [];
  receiver?.close();
  receiver = undefined;
});

async function start(options: Parameters<typeof createSandbox>[0] = {}) {
  sandbox = createSandbox(options);
  opened.push(sandbox);
  url = await sandbox.listen();
}
const get = (path: string, key = sandbox.apiKey) => fetch(`${url}${path}`, { headers: { authorization: `Bearer ${key}` } });
const send = (method: string, path: string, body: unknown) =>
  fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${sandbox.apiKey}`, "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
const json = async (res: Response) =>
  (await res.json()) as Record<string, unknown> & { data: Record<string, unknown>[]; nextCursor: string | null; error: { code: string } };

/** A local receiver that answers with `statuses` in turn (then 200) and records each delivery. */
async function startReceiver(statuses: number[] = []) {
  const got: { body: string; signature: string }[] = [];
  receiver = createServer((req, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      got.push({ body, signature: String(req.headers["x-svc-signature"]) });
      res.statusCode = statuses.shift() ?? 200;
      res.end();
    });
  });
  await new Promise<void>((r) => receiver!.listen(0, "127.0.0.1", () => r()));
  return { url: `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`, got };
}

describe("sandbox API", () => {
  it("refuses requests without a valid svc_live_ key", async () => {
    await start();
    for (const auth of [undefined, "Bearer sk_test_123", "Bearer svc_live_unknown", "Basic abc"]) {
      const res = await fetch(`${url}/api/v1/orders`, auth ? { headers: { authorization: auth } } : {});
      expect(res.status).toBe(401);
      expect((await json(res)).error.code).toBe("unauthorized");
    }
    expect(sandbox.requestLog.map((r) => r.status)).toEqual([401, 401, 401, 401]);
    expect(sandbox.requestLog[2]!.keyHash).toMatch(/^[0-9a-f]{12}$/);
  });

  it("lists orders with the spec's fields, filters and limit bounds", async () => {
    await start();
    const page = await json(await get("/api/v1/orders?restaurantId=rest_2&status=DELIVERED"));
    expect(page.data.length).toBeGreaterThan(0);
    for (const o of page.data) expect(o).toMatchObject({ restaurantId: "rest_2", status: "DELIVERED" });
    expect(Object.keys(page.data[0]!).sort()).toEqual(
      [
        "bookingId",
        "createdAt",
        "currency",
        "id",
        "items",
        "paidAt",
        "refundedAt",
        "restaurantId",
        "status",
        "subtotal",
        "tax",
        "tip",
        "total",
        "type",
      ].sort(),
    );
    const dineIn = await json(await get("/api/v1/orders?type=DINE_IN&limit=100"));
    expect(dineIn.data.every((o) => o.type === "DINE_IN")).toBe(true);
    expect((await json(await get("/api/v1/orders?limit=100"))).data.some((o) => o.bookingId !== null)).toBe(true);
    for (const bad of ["limit=0", "limit=101", "limit=abc", "status=SHIPPED", "type=DRONE", "cursor=bm9wZQ"]) {
      const res = await get(`/api/v1/orders?${bad}`);
      expect(res.status, bad).toBe(400);
      expect((await json(res)).error.code).toBe("invalid_request");
    }
  });

  it("lists bookings by restaurant, status and date range, and menu items by restaurant", async () => {
    await start();
    const all = sandbox.state.bookings();
    const from = all.map((b) => b.date.slice(0, 10)).sort()[3]!;
    const page = await json(await get(`/api/v1/bookings?restaurantId=rest_1&status=CONFIRMED&from=${from}&to=2099-01-01`));
    const expected = all.filter((b) => b.restaurantId === "rest_1" && b.status === "CONFIRMED" && b.date.slice(0, 10) >= from);
    expect(page.data.map((b) => b.id).sort()).toEqual(expected.map((b) => b.id).sort());
    expect((await get("/api/v1/bookings?from=22-11-2026")).status).toBe(400);
    const menu = await json(await get("/api/v1/menu-items?restaurantId=rest_3"));
    expect(menu.data.length).toBe(6);
    expect(menu.data[0]).toMatchObject({
      restaurantId: "rest_3",
      price: expect.any(Number) as unknown,
      allergens: expect.any(Array) as unknown,
      tags: expect.any(Array) as unknown,
    });
  });

  it("moves orders along the state machine and refunds paid ones", async () => {
    await start();
    const order = sandbox.actions.createOrder({ paid: true });
    expect((await send("PATCH", `/api/v1/orders/${order.id}/status`, { status: "PREPARING" })).status).toBe(409);
    const moved = await send("PATCH", `/api/v1/orders/${order.id}/status`, { status: "CONFIRMED" });
    expect(moved.status).toBe(200);
    expect(await moved.json()).toMatchObject({ id: order.id, status: "CONFIRMED" });
    expect((await send("PATCH", `/api/v1/orders/${order.id}/status`, { status: "REFUNDED" })).status).toBe(400);
    expect((await send("PATCH", `/api/v1/orders/${order.id}/status`, "not json")).status).toBe(400);
    expect((await send("PATCH", `/api/v1/orders/ord_missing/status`, { status: "CONFIRMED" })).status).toBe(404);
    const refunded = await json(await send("POST", `/api/v1/orders/${order.id}/refund`, { reason: "late" }));
    expect(refunded).toMatchObject({ status: "REFUNDED", refundedAt: expect.any(String) as unknown });
    const again = await send("POST", `/api/v1/orders/${order.id}/refund`, {});
    expect([again.status, (await json(again)).error.code]).toEqual([409, "not_refundable"]);
    const unpaid = sandbox.actions.createOrder({ paid: false });
    expect((await send("POST", `/api/v1/orders/${unpaid.id}/refund`, {})).status).toBe(409);
    expect((await send("POST", `/api/v1/orders/${order.id}/refund`, { reason: 5 })).status).toBe(400);
  });

  it("creates bookings with a confirmation code", async () => {
    await start();
    const res = await send("POST", "/api/v1/bookings", {
      restaurantId: "rest_1",
      date: "2026-12-24",
      time: "19:30",
      partySize: 4,
      diner: { name: "Ada", email: "ada@example.com" },
    });
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({
      status: "CONFIRMED",
      confirmCode: expect.stringMatching(/^[A-Z0-9]{6}$/) as unknown,
      date: "2026-12-24T00:00:00.000Z",
    });
    const bad = await send("POST", "/api/v1/bookings", { restaurantId: "rest_1", date: "tomorrow", partySize: 0 });
    expect(bad.status).toBe(400);
  });

  it("answers 429 with Retry-After over the per-key limit; refused requests do not count", async () => {
    await start({ rateLimit: { max: 3, windowMs: 60_000 } });
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await get("/api/v1/menu-items")).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    const res = await get("/api/v1/menu-items");
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect((await json(res)).error.code).toBe("rate_limited");
  });

  it("injects faults as data: status, times, after, delay", async () => {
    await start();
    sandbox.faults.add({ method: "GET", path: "/api/v1/orders", status: 503, after: 1, times: 2 });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await get("/api/v1/orders")).status);
    expect(statuses).toEqual([200, 503, 503, 200]);
    sandbox.faults.add({ path: "/api/v1/menu-items", status: 429, retryAfterSeconds: 7, times: 1 });
    expect((await get("/api/v1/menu-items")).headers.get("retry-after")).toBe("7");
    sandbox.faults.clear();
    sandbox.faults.add({ path: "/api/v1/bookings", delayMs: 200, times: 1 });
    await expect(
      fetch(`${url}/api/v1/bookings`, { headers: { authorization: `Bearer ${sandbox.apiKey}` }, signal: AbortSignal.timeout(50) }),
    ).rejects.toThrow();
  });
});

describe("sandbox webhooks", () => {
  it("signs every change with the endpoint's secret; thin endpoints get identifiers only", async () => {
    const full = await startReceiver();
    await start();
    sandbox.addWebhook({ url: full.url, secret: "s-full" });
    const order = sandbox.actions.createOrder({ restaurantId: "rest_1" });
    sandbox.actions.updateOrderStatus(order.id, "CONFIRMED");
    sandbox.actions.createReview({ restaurantId: "rest_2" });
    await sandbox.idle();
    expect(full.got).toHaveLength(3);
    for (const d of full.got) expect(verifySignature(Buffer.from(d.body), d.signature, ["s-full"])).toBe(0);
    const events = full.got.map((d) => JSON.parse(d.body) as { id: string; type: string; data: Record<string, unknown> });
    expect(events.map((e) => e.type).sort()).toEqual(["order.created", "order.status_changed", "review.created"]);
    expect(events.find((e) => e.type === "order.status_changed")!.data).toMatchObject({
      id: order.id,
      status: "CONFIRMED",
      items: expect.any(Array) as unknown,
    });

    sandbox.removeWebhooks();
    const thin = await startReceiver();
    sandbox.addWebhook({ url: thin.url, secret: "s-thin", thin: true });
    sandbox.actions.refundOrder(sandbox.state.orders().find((o) => o.paidAt && o.status !== "REFUNDED")!.id);
    await sandbox.idle();
    const [event] = thin.got.map((d) => JSON.parse(d.body) as { type: string; data: object });
    expect(event).toMatchObject({ type: "order.refunded" });
    expect(Object.keys(event!.data).sort()).toEqual(["id", "restaurantId"]);
  });

  it("retries a failed delivery with the same event id", async () => {
    const flaky = await startReceiver([500, 503]);
    await start({ delivery: { retryDelaysMs: [20, 40] } });
    sandbox.addWebhook({ url: flaky.url, secret: "s" });
    sandbox.actions.createReview();
    await sandbox.idle();
    const ids = flaky.got.map((d) => (JSON.parse(d.body) as { id: string }).id);
    expect(ids).toHaveLength(3);
    expect(new Set(ids).size).toBe(1);
    expect(sandbox.deliveries.map((d) => [d.attempt, d.status])).toEqual([
      [1, 500],
      [2, 503],
      [3, 200],
    ]);
  });

  it("gives up after the last retry", async () => {
    const down = await startReceiver([500, 500, 500]);
    await start({ delivery: { retryDelaysMs: [10, 10] } });
    sandbox.addWebhook({ url: down.url, secret: "s" });
    sandbox.actions.createReview();
    await sandbox.idle();
    expect(down.got).toHaveLength(3);
    expect(sandbox.deliveries.at(-1)).toMatchObject({ attempt: 3, status: 500 });
  });

  it("is seeded deterministically", async () => {
    await start({ seed: 42 });
    const first = sandbox.state.orders().map((o) => [o.id, o.status, o.total]);
    await sandbox.close();
    await start({ seed: 42 });
    expect(sandbox.state.orders().map((o) => [o.id, o.status, o.total])).toEqual(first);
  });
});
