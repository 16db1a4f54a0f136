import { createServer, type Server } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import type { Booking, Order } from "../../src/sandbox/records.js";
import { waitFor } from "../helpers/wait-for.js";

let opened: Sandbox[] = [];
let receiver: Server | undefined;
afterEach(async () => {
  await Promise.all(opened.map((s) => s.close()));
  opened = [];
  receiver?.close();
  receiver = undefined;
});

async function start(options: Parameters<typeof createSandbox>[0] = {}) {
  const sandbox = createSandbox(options);
  opened.push(sandbox);
  const url = await sandbox.listen();
  const get = async (path: string) => {
    const res = await fetch(`${url}/api/v1${path}`, { headers: { authorization: `Bearer ${sandbox.apiKey}` } });
    expect(res.status, path).toBe(200);
    return (await res.json()) as { data: (Order & Booking)[]; nextCursor: string | null };
  };
  /** Every item of a list, page by page, with the pages' sizes. */
  const walk = async (path: string, between?: (page: number) => void) => {
    const items: (Order & Booking)[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 10_000; page++) {
      const sep = path.includes("?") ? "&" : "?";
      const body = await get(`${path}${cursor ? `${sep}cursor=${cursor}` : ""}`);
      items.push(...body.data);
      cursor = body.nextCursor;
      if (!cursor) break;
      between?.(page);
    }
    return items;
  };
  return { sandbox, url, get, walk };
}

/** A receiver that counts deliveries by event type. */
async function startReceiver() {
  const got: { type: string; id: string }[] = [];
  receiver = createServer((req, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      const event = JSON.parse(body) as { type: string; data: { id: string } };
      got.push({ type: event.type, id: event.data.id });
      res.end();
    });
  });
  await new Promise<void>((r) => receiver!.listen(0, "127.0.0.1", () => r()));
  return { url: `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`, got };
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

describe("sandbox history", () => {
  it("seeds a company's history ending now: finished when old, in flight when recent, no webhooks", async () => {
    const hook = await startReceiver();
    const { sandbox } = await start({ restaurants: 8, webhooks: [{ url: hook.url, secret: "s" }], history: { orders: 20_000, days: 90 } });
    const orders = sandbox.state.orders();
    const now = Date.now();
    expect(orders).toHaveLength(20_000);
    expect(new Set(orders.map((o) => o.restaurantId)).size).toBe(8);
    const ages = orders.map((o) => now - Date.parse(o.createdAt));
    expect(Math.max(...ages)).toBeGreaterThan(89 * DAY);
    expect(Math.max(...ages)).toBeLessThanOrEqual(90 * DAY + 60_000);
    expect(Math.min(...ages)).toBeGreaterThan(0);
    const old = orders.filter((o) => now - Date.parse(o.createdAt) > HOUR);
    const recent = orders.filter((o) => now - Date.parse(o.createdAt) < 50 * 60_000);
    expect(old.every((o) => ["DELIVERED", "CANCELLED", "REFUNDED"].includes(o.status))).toBe(true);
    const share = (status: string) => old.filter((o) => o.status === status).length / old.length;
    expect(share("DELIVERED")).toBeGreaterThan(0.8);
    expect(share("CANCELLED")).toBeGreaterThan(0.03);
    expect(share("REFUNDED")).toBeGreaterThan(0.01);
    for (const o of old.filter((x) => x.status === "REFUNDED")) {
      expect(o.paidAt).not.toBeNull();
      expect(Date.parse(o.refundedAt!)).toBeGreaterThan(Date.parse(o.createdAt));
      expect(Date.parse(o.refundedAt!)).toBeLessThan(now);
    }
    expect(recent.length).toBeGreaterThan(0);
    expect(recent.filter((o) => ["PENDING", "CONFIRMED", "PREPARING", "READY"].includes(o.status)).length).toBeGreaterThan(
      recent.length / 2,
    );
    expect(orders.every((o) => o.items.length > 0 && o.total > 0)).toBe(true);

    const bookings = sandbox.state.bookings();
    expect(bookings).toHaveLength(5_000);
    const days = bookings.map((b) => (Date.parse(b.date) - now) / DAY);
    expect(Math.min(...days)).toBeLessThan(-89);
    expect(Math.max(...days)).toBeGreaterThan(10);
    expect(Math.max(...days)).toBeLessThan(15);
    const cancelled = bookings.filter((b) => b.status === "CANCELLED").length / bookings.length;
    expect(cancelled).toBeGreaterThan(0.03);
    expect(cancelled).toBeLessThan(0.2);
    expect(bookings.every((b) => Date.parse(b.createdAt) < now)).toBe(true);
    expect(sandbox.state.menuItems()).toHaveLength(8 * 6);
    // Seeding sent nothing; a change afterwards is delivered as usual.
    sandbox.actions.updateMenuItem(sandbox.state.menuItems()[0]!.id, { stock: 3 });
    await sandbox.idle();
    expect(hook.got.map((g) => g.type)).toEqual(["menu_item.updated"]);
  });

  it("is deterministic from the seed", async () => {
    const shape = (s: Sandbox) => [
      s.state.orders().map((o) => [o.id, o.status, o.total, o.restaurantId]),
      s.state.bookings().map((b) => [b.id, b.date, b.status]),
    ];
    const a = (await start({ seed: 7, history: { orders: 2_000, days: 30 } })).sandbox;
    const b = (await start({ seed: 7, history: { orders: 2_000, days: 30 } })).sandbox;
    const c = (await start({ seed: 8, history: { orders: 2_000, days: 30 } })).sandbox;
    expect(shape(a)).toEqual(shape(b));
    expect(shape(c)).not.toEqual(shape(a));
  });

  it("refuses a history it cannot seed", () => {
    expect(() => createSandbox({ history: { orders: -1, days: 30 } })).toThrow(/history needs/);
    expect(() => createSandbox({ history: { orders: 10, days: 0 } })).toThrow(/history needs/);
  });
});

describe("sandbox lists at scale", () => {
  it("answer every filter as the naive filter and sort would, newest orders first", async () => {
    const { sandbox, walk } = await start({ restaurants: 5, history: { orders: 3_000, days: 60 } });
    const orders = sandbox.state.orders().sort((a, b) => (a.createdAt < b.createdAt ? 1 : -1));
    const ids = (xs: { id: string }[]) => xs.map((x) => x.id);
    expect(ids(await walk("/orders?limit=100"))).toEqual(ids(orders));
    expect(ids(await walk("/orders?restaurantId=rest_2&status=CANCELLED&limit=37"))).toEqual(
      ids(orders.filter((o) => o.restaurantId === "rest_2" && o.status === "CANCELLED")),
    );
    expect(ids(await walk("/orders?status=REFUNDED&type=DELIVERY&limit=100"))).toEqual(
      ids(orders.filter((o) => o.status === "REFUNDED" && o.type === "DELIVERY")),
    );
    const bookings = sandbox.state.bookings().sort((a, b) => (`${a.date}${a.time}${a.id}` < `${b.date}${b.time}${b.id}` ? -1 : 1));
    const from = new Date(Date.now() - 10 * DAY).toISOString().slice(0, 10);
    const to = new Date(Date.now() + 3 * DAY).toISOString().slice(0, 10);
    expect(ids(await walk(`/bookings?restaurantId=rest_4&from=${from}&to=${to}&limit=20`))).toEqual(
      ids(bookings.filter((b) => b.restaurantId === "rest_4" && b.date.slice(0, 10) >= from && b.date.slice(0, 10) <= to)),
    );
  });

  it("keeps a cursor valid while records change: each record unchanged during the walk is listed once", async () => {
    const { sandbox, walk } = await start({ restaurants: 3, history: { orders: 2_000, days: 30 } });
    const before = sandbox.state.orders();
    const touched = new Set<string>();
    const delivered = before.filter((o) => o.status === "DELIVERED" && o.paidAt);
    const listed = await walk("/orders?limit=50", (page) => {
      // Between pages: new orders arrive, old ones are refunded, in-flight ones move on.
      touched.add(sandbox.actions.createOrder().id);
      const old = delivered[(page * 37) % delivered.length]!;
      if (!touched.has(old.id)) touched.add(sandbox.actions.refundOrder(old.id).id);
    });
    const ids = listed.map((o) => o.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const o of before) if (!touched.has(o.id)) expect(ids).toContain(o.id);
    // A status-filtered walk: a record that left the status between pages is simply not listed again.
    const cancelled = await walk("/orders?status=CANCELLED&limit=10", () => {
      const open = sandbox.state.orders().find((o) => o.status === "PENDING" || o.status === "CONFIRMED");
      if (open) sandbox.actions.updateOrderStatus(open.id, "CANCELLED");
    });
    expect(new Set(cancelled.map((o) => o.id)).size).toBe(cancelled.length);
    expect(cancelled.every((o) => o.status === "CANCELLED")).toBe(true);
  });

  it("re-lists a record whose fields the control route overwrote", async () => {
    const { sandbox, url, get } = await start({ restaurants: 2, history: { orders: 300, days: 10 } });
    const order = sandbox.state.orders().find((o) => o.status === "DELIVERED")!;
    const res = await fetch(`${url}/_sandbox/records/orders/${order.id}`, {
      method: "POST",
      body: JSON.stringify({ status: "CANCELLED" }),
    });
    expect(res.status).toBe(200);
    const cancelled = await get(`/orders?restaurantId=${order.restaurantId}&status=CANCELLED&limit=100`);
    expect(cancelled.data.map((o) => o.id)).toContain(order.id);
    const delivered = await get(`/orders?restaurantId=${order.restaurantId}&status=DELIVERED&limit=100`);
    expect(delivered.data.map((o) => o.id)).not.toContain(order.id);
  });
});

describe("sandbox list options", () => {
  it("lists orders oldest first and bookings by date descending when asked", async () => {
    const { walk } = await start({ history: { orders: 500, days: 20 }, lists: { orders: "oldest-first", bookings: "date-descending" } });
    const orders = (await walk("/orders?limit=100")).map((o) => o.createdAt);
    expect(orders).toEqual([...orders].sort());
    const bookings = (await walk("/bookings?limit=100")).map((b) => `${b.date} ${b.time}`);
    expect(bookings).toEqual([...bookings].sort().reverse());
    expect(bookings.length).toBe(125);
  });

  it("takes the bookings' upper bound under another name, or ignores it", async () => {
    const to = new Date(Date.now() - 5 * DAY).toISOString().slice(0, 10);
    const renamed = await start({ history: { orders: 400, days: 20 }, lists: { bookingsUpperBound: { name: "until" } } });
    const until = await renamed.walk(`/bookings?until=${to}&limit=100`);
    expect(until.length).toBeGreaterThan(0);
    expect(until.every((b) => b.date.slice(0, 10) <= to)).toBe(true);
    // The default name means nothing to this upstream: the whole list comes back.
    expect(await renamed.walk(`/bookings?to=${to}&limit=100`)).toHaveLength(100);
    const deaf = await start({ history: { orders: 400, days: 20 }, lists: { bookingsUpperBound: { honoured: false } } });
    expect(await deaf.walk(`/bookings?to=${to}&limit=100`)).toHaveLength(100);
  });
});

describe("sandbox keys", () => {
  it("meters its keys but not the unmetered ones (a fast import beside the real budget)", async () => {
    const importKey = "svc_live_import0000000000000000";
    const sandbox = createSandbox({ rateLimit: { max: 2, windowMs: 60_000 }, unmeteredKeys: [importKey] });
    opened.push(sandbox);
    const url = await sandbox.listen();
    const status = async (key: string) => (await fetch(`${url}/api/v1/menu-items`, { headers: { authorization: `Bearer ${key}` } })).status;
    const metered = [await status(sandbox.apiKey), await status(sandbox.apiKey), await status(sandbox.apiKey)];
    const unmetered = [await status(importKey), await status(importKey), await status(importKey)];
    expect(metered).toEqual([200, 200, 429]);
    expect(unmetered).toEqual([200, 200, 200]);
    expect(() => createSandbox({ unmeteredKeys: ["sk_live_x"] })).toThrow(/svc_live_/);
  });
});

describe("sandbox traffic", () => {
  it("moves new orders through the kitchen and refunds old ones, with a webhook per change", async () => {
    const hook = await startReceiver();
    const { sandbox } = await start({ restaurants: 4, history: { orders: 2_000, days: 30 }, webhooks: [{ url: hook.url, secret: "s" }] });
    const traffic = sandbox.startTraffic({ eventsPerSecond: 60, orderLifetimeMs: 800, mix: { newOrders: 1, refunds: 1 } });
    await waitFor(
      () => {
        const types = new Set(traffic.changes.map((c) => `${c.type}:${c.status ?? ""}`));
        return types.has("order.status_changed:DELIVERED") && types.has("order.refunded:REFUNDED");
      },
      { timeoutMs: 20_000, what: "an order delivered and an old one refunded" },
    );
    traffic.stop();
    await sandbox.idle();
    expect(hook.got).toHaveLength(traffic.changes.length);
    expect(hook.got.map((g) => g.id).sort()).toEqual(traffic.changes.map((c) => c.id).sort());
    const delivered = traffic.changes.find((c) => c.status === "DELIVERED")!;
    expect(sandbox.state.history(delivered.id).map((s) => (s as Order).status)).toEqual([
      "PENDING",
      "CONFIRMED",
      "PREPARING",
      "READY",
      "DELIVERED",
    ]);
    // A refunded order of the seeded history: its seeded state first, then the refund.
    const refund = traffic.changes.find((c) => c.type === "order.refunded")!;
    const states = sandbox.state.history(refund.id) as Order[];
    expect(states.map((s) => s.status)).toEqual(["DELIVERED", "REFUNDED"]);
    expect(Date.now() - Date.parse(states[0]!.createdAt)).toBeGreaterThan(HOUR);
  });

  it("can make its changes without their webhooks (missed deliveries)", async () => {
    const hook = await startReceiver();
    const { sandbox, get } = await start({ history: { orders: 300, days: 10 }, webhooks: [{ url: hook.url, secret: "s" }] });
    const traffic = sandbox.startTraffic({ eventsPerSecond: 40, missedShare: 1, mix: { newOrders: 1 } });
    await waitFor(() => traffic.changes.length >= 5, { timeoutMs: 10_000, what: "five changes" });
    traffic.stop();
    await sandbox.idle();
    expect(hook.got).toHaveLength(0);
    expect(traffic.changes.every((c) => c.missed)).toBe(true);
    // The upstream has them all the same.
    const newest = await get("/orders?limit=5");
    expect(newest.data.map((o) => o.id)).toContain(traffic.changes.at(-1)!.id);
    expect(() => sandbox.startTraffic({ eventsPerSecond: 0 })).toThrow(/eventsPerSecond/);
  });
});
