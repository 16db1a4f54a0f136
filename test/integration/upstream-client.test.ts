import { randomUUID } from "node:crypto";
import { createServer, type AddressInfo, type Socket } from "node:net";
import { Redis } from "ioredis";
import { afterEach, describe, expect, inject, it } from "vitest";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { createApiClient, type ApiClient, type ApiClientOptions } from "../../src/upstream/client.js";
import { apiKeyId } from "../../src/base/api-key.js";
import {
  UpstreamAbortedError,
  UpstreamAuthError,
  UpstreamBadRequestError,
  UpstreamConflictError,
  UpstreamNotFoundError,
  UpstreamRequestError,
  UpstreamServerError,
  UpstreamTimeoutError,
} from "../../src/upstream/errors.js";
import { createRateLimiter } from "../../src/upstream/rate-limiter.js";
import { waitFor } from "../helpers/wait-for.js";

let sandbox: Sandbox;
// Every sandbox opened, closed after each test (one that failed before opening any leaves none).
let opened: Sandbox[] = [];
let conns: Redis[] = [];
afterEach(async () => {
  await Promise.all(opened.map((s) => s.close()));
  opened = [];
  await Promise.all(conns.map((c) => c.quit()));
  conns = [];
});

async function setup(sandboxOptions: Parameters<typeof createSandbox>[0] = {}) {
  sandbox = createSandbox(sandboxOptions);
  opened.push(sandbox);
  return sandbox.listen();
}

/** A client with its own Redis connection and limiter, as a separate process would have. */
function client(
  baseUrl: string,
  extra: Partial<ApiClientOptions> & {
    rate?: { max: number; windowMs: number; safetyMs: number };
    prefix?: string;
    onSlot?: () => void;
  } = {},
): ApiClient {
  const redis = new Redis(inject("redisUrl"));
  conns.push(redis);
  const { rate, prefix, onSlot, ...rest } = extra;
  return createApiClient({
    baseUrl,
    apiKey: sandbox.apiKey,
    limiter: createRateLimiter({
      redis,
      keyId: apiKeyId(sandbox.apiKey),
      prefix: prefix ?? `test-${randomUUID().slice(0, 8)}`,
      ...(rate ?? { max: 1000, windowMs: 1000, safetyMs: 0 }),
      ...(onSlot ? { onSlot } : {}),
    }),
    retryBaseMs: 10,
    ...rest,
  });
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

describe("upstream client against the sandbox", () => {
  it.each([1, 7, 100])("iterates every order exactly once at page size %i", async (limit) => {
    const api = client(await setup());
    const orders = await collect(api.iterateOrders({ limit }));
    const truth = sandbox.state.orders();
    expect(orders.map((o) => o.id).sort()).toEqual(truth.map((o) => o.id).sort());
    expect(new Set(orders.map((o) => o.id)).size).toBe(truth.length);
    expect(sandbox.requestLog).toHaveLength(Math.ceil(truth.length / limit));
  });

  it("passes every filter through", async () => {
    const api = client(await setup());
    const orders = await api.listOrders({ restaurantId: "rest_1", status: "READY", type: undefined, limit: 100 });
    expect(orders.data.every((o) => o.restaurantId === "rest_1" && o.status === "READY")).toBe(true);
    const bookings = await collect(
      api.iterateBookings({ restaurantId: "rest_2", status: "CONFIRMED", from: "2000-01-01", to: "2999-12-31", limit: 2 }),
    );
    expect(bookings.map((b) => b.id).sort()).toEqual(
      sandbox.state
        .bookings()
        .filter((b) => b.restaurantId === "rest_2" && b.status === "CONFIRMED")
        .map((b) => b.id)
        .sort(),
    );
    const menu = await collect(api.iterateMenuItems({ restaurantId: "rest_3", limit: 4 }));
    expect(menu).toHaveLength(6);
    expect(menu[0]).toMatchObject({ allergens: expect.any(Array) as unknown, tags: expect.any(Array) as unknown });
    // Fields the spec does not show are kept.
    expect(menu[0]).toHaveProperty("description");
  });

  it("writes: status moves, refunds and bookings", async () => {
    const api = client(await setup());
    const order = sandbox.actions.createOrder({ paid: true });
    expect((await api.updateOrderStatus(order.id, "CONFIRMED")).status).toBe("CONFIRMED");
    expect(await api.refundOrder(order.id, "wrong table")).toMatchObject({ status: "REFUNDED", refundedAt: expect.any(String) as unknown });
    const booking = await api.createBooking({
      restaurantId: "rest_1",
      date: "2026-12-24",
      time: "20:00",
      partySize: 2,
      diner: { name: "Ada", email: "ada@example.com" },
    });
    expect(booking.confirmCode).toMatch(/^[A-Z0-9]{6}$/);
  });

  it("refuses limit > 100 before sending anything", async () => {
    const api = client(await setup());
    await expect(api.listOrders({ limit: 101 })).rejects.toBeInstanceOf(UpstreamRequestError);
    expect(sandbox.requestLog).toHaveLength(0);
  });

  it("maps each error to its typed class", async () => {
    const baseUrl = await setup();
    const api = client(baseUrl);
    const unpaid = sandbox.actions.createOrder({ paid: false });
    await expect(createApiClient({ baseUrl, apiKey: "svc_live_wrong" }).listOrders()).rejects.toMatchObject({
      name: "UpstreamAuthError",
      status: 401,
      code: "unauthorized",
    });
    await expect(api.updateOrderStatus("ord_missing", "CONFIRMED")).rejects.toBeInstanceOf(UpstreamNotFoundError);
    await expect(api.updateOrderStatus(unpaid.id, "READY")).rejects.toMatchObject({
      constructor: UpstreamConflictError,
      code: "invalid_transition",
    });
    await expect(api.refundOrder(unpaid.id)).rejects.toMatchObject({ status: 409, code: "not_refundable" });
    await expect(
      api.createBooking({ restaurantId: "rest_1", date: "soon", time: "x", partySize: 0, diner: { name: "", email: "" } }),
    ).rejects.toBeInstanceOf(UpstreamBadRequestError);
    sandbox.faults.add({ path: "/api/v1/menu-items", status: 502 });
    await expect(api.listMenuItems()).rejects.toMatchObject({ constructor: UpstreamServerError, status: 502 });
    sandbox.faults.clear();
    sandbox.faults.add({ path: "/api/v1/bookings", delayMs: 300 });
    await expect(client(baseUrl, { timeoutMs: 50, readRetries: 0 }).listBookings()).rejects.toBeInstanceOf(UpstreamTimeoutError);
    expect(new UpstreamAuthError("x")).toBeInstanceOf(Error);
  });

  it("retries a read after a 5xx, and never re-sends a write after one", async () => {
    const api = client(await setup());
    sandbox.faults.add({ method: "GET", path: "/api/v1/orders", status: 503, times: 1 });
    expect((await api.listOrders()).data.length).toBeGreaterThan(0);
    expect(sandbox.requestLog.map((r) => r.status)).toEqual([503, 200]);

    const order = sandbox.actions.createOrder();
    sandbox.faults.add({ method: "PATCH", path: "/api/v1/orders", status: 500, times: 1 });
    await expect(api.updateOrderStatus(order.id, "CONFIRMED")).rejects.toBeInstanceOf(UpstreamServerError);
    expect(sandbox.requestLog.filter((r) => r.method === "PATCH")).toHaveLength(1);
  });

  it("retries a read whose body stalls past the timeout after the headers came, and succeeds", async () => {
    const api = client(await setup(), { timeoutMs: 300 });
    sandbox.faults.add({ method: "GET", path: "/api/v1/orders", stallBodyMs: 5000, times: 1 });
    expect((await api.listOrders()).data.length).toBe(sandbox.state.orders().length);
    expect(sandbox.requestLog.map((r) => r.status)).toEqual([200, 200]);
  });

  it("fails a read whose body keeps stalling with UpstreamTimeoutError after its retries", async () => {
    const api = client(await setup(), { timeoutMs: 200, readRetries: 2 });
    sandbox.faults.add({ method: "GET", path: "/api/v1/menu-items", stallBodyMs: 5000 });
    await expect(api.listMenuItems()).rejects.toMatchObject({
      constructor: UpstreamTimeoutError,
      message: expect.stringContaining("GET /api/v1/menu-items") as unknown,
    });
    expect(sandbox.requestLog).toHaveLength(3);
  });

  it("waits out Retry-After after a 429, sending nothing meanwhile, then succeeds", async () => {
    const api = client(await setup());
    sandbox.faults.add({ path: "/api/v1/orders", status: 429, retryAfterSeconds: 1, times: 1 });
    const order = sandbox.actions.createOrder();
    await expect(api.updateOrderStatus(order.id, "CONFIRMED")).resolves.toMatchObject({ status: "CONFIRMED" });
    const [limited, next] = sandbox.requestLog;
    expect(limited!.status).toBe(429);
    expect(next!.status).toBe(200);
    expect(next!.at - limited!.at).toBeGreaterThanOrEqual(1000);
  });

  it("stamps a list's read time per attempt, after the rate-limit slot: a read that waited out Retry-After is not dated before the wait", async () => {
    const api = client(await setup());
    sandbox.faults.add({ path: "/api/v1/orders", status: 429, retryAfterSeconds: 1, times: 1 });
    const stamps: Date[] = [];
    const clock = () => {
      const now = new Date();
      stamps.push(now);
      return Promise.resolve(now);
    };
    const page = await api.listOrders({ limit: 5 }, { clock });
    const [limited, answered] = sandbox.requestLog;
    expect([limited!.status, answered!.status]).toEqual([429, 200]);
    // One stamp per request sent, each taken before its request left; the page carries the second.
    expect(stamps).toHaveLength(2);
    expect(stamps[0]!.getTime()).toBeLessThanOrEqual(limited!.at);
    expect(stamps[1]!.getTime()).toBeGreaterThanOrEqual(limited!.at + 1000);
    expect(stamps[1]!.getTime()).toBeLessThanOrEqual(answered!.at);
    expect(page.readAt).toBe(stamps[1]);
  });

  /** 30 reads by two clients sharing one key against a sandbox allowing 10 a second; the sandbox's log of them. */
  async function sharedKeyReads(onSlot?: () => void) {
    const baseUrl = await setup({ rateLimit: { max: 10, windowMs: 1000 } });
    const prefix = `test-${randomUUID().slice(0, 8)}`;
    // safetyMs is for the clocks' difference (none here: one host); lateness is the limiter's own
    // to absorb, below.
    const rate = { max: 10, windowMs: 1000, safetyMs: 400 };
    const a = client(baseUrl, { rate, prefix, ...(onSlot ? { onSlot } : {}) });
    const b = client(baseUrl, { rate, prefix });
    await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).listMenuItems({ limit: 1 })));
    return sandbox.requestLog;
  }
  const expectNoWindowOver = (log: { at: number; status: number }[]) => {
    expect(log).toHaveLength(30);
    expect(log.filter((r) => r.status === 429)).toHaveLength(0);
    const times = log.map((r) => r.at).sort((x, y) => x - y);
    for (let i = 10; i < times.length; i++) expect(times[i]! - times[i - 10]!).toBeGreaterThanOrEqual(1000);
  };

  it("keeps two clients sharing one key under the sandbox's limit: no 429, no window over it", async () => {
    expectNoWindowOver(await sharedKeyReads());
  });

  it("keeps them under it when the process stalls between a slot and its request (a long GC, a busy host)", async () => {
    // The fault: the whole process (clients and sandbox) stops for 600 ms right after the sixth
    // slot, longer than safetyMs, so the first slots' requests reach the API 600 ms after their
    // slots' times. Counted from when they were taken, those slots left the budget's window while
    // the API still counted them: the next ones were sent into a full window (six 429s).
    let slots = 0;
    const stall = () => {
      if (++slots === 6) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 600);
    };
    expectNoWindowOver(await sharedKeyReads(stall));
  });
});

describe("a stopping caller aborts the call wherever it waits", () => {
  it("ends a read the API holds with UpstreamAbortedError once the client's signal aborts, not at its timeout", async () => {
    const baseUrl = await setup();
    sandbox.faults.add({ path: "/api/v1/orders", delayMs: 120_000 });
    const stop = new AbortController();
    const api = client(baseUrl, { timeoutMs: 120_000, readRetries: 0, signal: stop.signal });
    const read = api.listOrders();
    // Once the API holds the request (in its log, not answered), the abort ends the call.
    await waitFor(() => sandbox.requestLog.some((r) => r.status === 0), { what: "the API holding the read" });
    stop.abort(new Error("shutdown deadline"));
    await expect(read).rejects.toMatchObject({ constructor: UpstreamAbortedError, code: "aborted", retryable: false });
    // A call after the stop is refused at once.
    await expect(api.listBookings()).rejects.toBeInstanceOf(UpstreamAbortedError);
  });

  it("ends a budget wait on a Redis that does not answer once the read's own signal aborts", async () => {
    const baseUrl = await setup();
    // A "Redis" that takes the connection and every command, and answers none.
    let received = "";
    const sockets: Socket[] = [];
    const mute = createServer((socket) => {
      sockets.push(socket);
      socket.on("data", (d) => (received += d.toString("latin1")));
    });
    await new Promise<void>((r) => mute.listen(0, "127.0.0.1", r));
    const away = new Redis((mute.address() as AddressInfo).port, "127.0.0.1", {
      maxRetriesPerRequest: null,
      enableReadyCheck: false,
      protocol: 2,
    });
    away.on("error", () => undefined);
    const api = createApiClient({
      baseUrl,
      apiKey: sandbox.apiKey,
      limiter: createRateLimiter({ redis: away, keyId: apiKeyId(sandbox.apiKey), prefix: `test-${randomUUID().slice(0, 8)}` }),
    });
    const ctrlC = new AbortController();
    const read = api.listOrders({}, { priority: "full", signal: ctrlC.signal });
    try {
      // Once the client has spoken (its handshake, unanswered), the budget's script waits behind
      // it for a Redis that never answers; the abort ends the call.
      await waitFor(() => received.length > 0, { what: "the client's handshake" });
      ctrlC.abort(new Error("interrupted"));
      await expect(read).rejects.toBeInstanceOf(UpstreamAbortedError);
      expect(sandbox.requestLog).toEqual([]);
    } finally {
      away.disconnect();
      for (const socket of sockets) socket.destroy();
      await new Promise((r) => mute.close(r));
    }
  });
});
