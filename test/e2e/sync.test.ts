import { createServer, type Server } from "node:http";
import { isDeepStrictEqual } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { importAll } from "../helpers/import-all.js";
import { startStack, type Stack } from "../helpers/stack.js";
import { sandboxAsSql, sqlMirror } from "../helpers/sql-mirror.js";
import { waitFor } from "../helpers/wait-for.js";

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

/** A burst of changes of every kind, made through the sandbox's actions (so webhooks fire). */
function liveTraffic(s: Stack) {
  const a = s.sandbox.actions;
  const created = Array.from({ length: 6 }, (_, i) => a.createOrder({ restaurantId: `rest_${(i % 3) + 1}`, paid: i % 2 === 0 }));
  for (const o of created) {
    a.updateOrderStatus(o.id, "CONFIRMED");
    a.updateOrderStatus(o.id, "PREPARING");
  }
  a.updateOrderStatus(created[1]!.id, "CANCELLED");
  a.refundOrder(created[0]!.id, "cold soup");
  const booking = a.createBooking({
    restaurantId: "rest_2",
    date: "2026-12-24",
    time: "19:30",
    partySize: 4,
    diner: { name: "Ada", email: "ada@example.com" },
  });
  a.cancelBooking(booking.id);
  a.createBooking({
    restaurantId: "rest_3",
    date: "2026-12-31",
    time: "20:00",
    partySize: 2,
    diner: { name: "Ken", email: "ken@example.com" },
  });
  const menuItem = s.sandbox.state.menuItems()[0]!;
  a.updateMenuItem(menuItem.id, { price: 99.5, stock: 3 });
  return a.createReview({ restaurantId: "rest_1", rating: 5, comment: "superb" });
}

/** Whether every kind the mirror holds equals the sandbox's (what a wait for the sync polls). */
async function mirrorEqualsSandbox(s: Stack): Promise<boolean> {
  for (const kind of ["orders", "bookings", "menu-items"] as const) {
    const { mirror, truth } = await s.compare(kind);
    if (!isDeepStrictEqual(mirror, truth)) return false;
  }
  return true;
}

async function expectMirrorEqualsSandbox(s: Stack) {
  for (const kind of ["orders", "bookings", "menu-items"] as const) {
    const { mirror, truth } = await s.compare(kind);
    expect(mirror, kind).toEqual(truth);
  }
  // And as SQL sees it: typed columns, amounts as decimals, line items in their own table.
  expect(await sqlMirror(s.svc.database.db)).toEqual(sandboxAsSql(s.sandbox.state));
}

describe("sync: the sandbox's webhooks keep the mirror equal to the API", () => {
  it("with full payloads", async () => {
    stack = await startStack();
    await importAll({ api: stack.svc.service.worker!.api!, mirror: stack.svc.service.mirror, db: stack.svc.database.db });
    const review = liveTraffic(stack);
    await stack.drained();
    await expectMirrorEqualsSandbox(stack);
    expect(await stack.svc.service.mirror.get("reviews", review.id)).toMatchObject({ rating: 5, comment: "superb" });
  });

  it("with thin payloads (identifiers only) and no backfill", async () => {
    stack = await startStack({ thin: true });
    liveTraffic(stack);
    await stack.drained();
    // Every record an event named is in the mirror, as the API has it now.
    const truth = new Map(stack.sandbox.state.orders().map((o) => [o.id, o]));
    const mirrored = await stack.svc.service.mirror.all("orders");
    expect(mirrored.length).toBeGreaterThanOrEqual(6);
    for (const o of mirrored) expect(o).toEqual(truth.get(o.id));
  });

  it("shuffled, duplicated and stale deliveries never regress the mirror", async () => {
    stack = await startStack({ deliver: false });
    // Capture what the sandbox sends instead of delivering it, to replay it in a hostile order.
    const captured: { body: string; signature: string }[] = [];
    const capture: Server = createServer((req, res) => {
      let body = "";
      req.on("data", (d: Buffer) => (body += d.toString()));
      req.on("end", () => {
        captured.push({ body, signature: String(req.headers["x-svc-signature"]) });
        res.end("ok");
      });
    });
    await new Promise<void>((r) => capture.listen(0, "127.0.0.1", () => r()));
    const port = (capture.address() as { port: number }).port;
    try {
      stack.sandbox.addWebhook({ url: `http://127.0.0.1:${port}/`, secret: "whsec_test_primary_5b0d1c7e" });
      const order = stack.sandbox.actions.createOrder({ restaurantId: "rest_1", paid: true });
      for (const status of ["CONFIRMED", "PREPARING", "READY", "DELIVERED"]) stack.sandbox.actions.updateOrderStatus(order.id, status);
      liveTraffic(stack);
      await stack.sandbox.idle();
      // Reverse order (the oldest snapshot last), every delivery twice.
      const replay = [...captured].reverse().flatMap((d) => [d, d]);
      // Send the newest first and let it sync, then the rest, stale snapshots included.
      const [newest, ...rest] = replay;
      const post = (d: { body: string; signature: string }) =>
        fetch(`${stack!.svc.url}/webhooks`, {
          method: "POST",
          body: d.body,
          headers: { "content-type": "application/json", "x-svc-signature": d.signature },
        }).then((r) => r.status);
      expect(await post(newest!)).toBe(200);
      await stack.drained();
      const statuses = await Promise.all(rest.map(post));
      expect(new Set(statuses)).toEqual(new Set([200]));
      await stack.drained();
      expect(await stack.svc.service.mirror.get("orders", order.id)).toMatchObject({ status: "DELIVERED" });
      const truth = new Map(stack.sandbox.state.orders().map((o) => [o.id, o]));
      for (const o of await stack.svc.service.mirror.all("orders")) expect(o).toEqual(truth.get(o.id));
      // Each event was taken once; its copies were answered 200 as duplicates. (The log also
      // holds the mirror's own change events: not deliveries.)
      const logged = (await stack.svc.service.eventLog.query({ limit: 1000 })).data.filter((e) => !e.type.startsWith("change."));
      expect(logged.length).toBe(captured.length);
    } finally {
      capture.close();
    }
  });

  it("a burst of 200 events for one restaurant costs fewer than 40 API calls", async () => {
    stack = await startStack({ env: { SYNC_DEBOUNCE_MS: "300" } });
    const a = stack.sandbox.actions;
    const before = stack.apiCalls();
    for (let i = 0; i < 50; i++) {
      const o = a.createOrder({ restaurantId: "rest_1" });
      a.updateOrderStatus(o.id, "CONFIRMED");
      a.updateOrderStatus(o.id, "PREPARING");
      a.updateOrderStatus(o.id, i % 5 === 0 ? "CANCELLED" : "READY");
    }
    await stack.drained();
    const calls = stack.apiCalls() - before;
    console.log(`burst of 200 events: ${calls} API calls`);
    expect(calls).toBeLessThan(40);
    const truth = new Map(stack.sandbox.state.orders().map((o) => [o.id, o]));
    const mirrored = (await stack.svc.service.mirror.all("orders")).filter((o) => o.restaurantId === "rest_1");
    expect(mirrored.filter((o) => truth.get(o.id)?.createdAt.startsWith(new Date().toISOString().slice(0, 10)))).not.toHaveLength(0);
    for (const o of mirrored) expect(o).toEqual(truth.get(o.id));
    expect(mirrored.length).toBeGreaterThanOrEqual(50);
  });

  it("keeps the mirror equal to the sandbox under its live simulation, with no 429", async () => {
    // The budget paces every call evenly (one per window ÷ rate): at 120 a minute the import and the
    // refreshes take minutes, so both sides run at 1,200; the limiter still must keep under the sandbox's.
    stack = await startStack({ sandbox: { simulate: { intervalMs: 10 } }, apiRate: 1200 });
    await importAll({ api: stack.svc.service.worker!.api!, mirror: stack.svc.service.mirror, db: stack.svc.database.db });
    await waitFor(() => stack!.sandbox.deliveries.length >= 150, { what: "150 simulated events" });
    stack.sandbox.stopSimulation();
    await stack.drained();
    // Equal once the refreshes the last events asked for have read (a job may still be pacing when
    // the queues first look idle); a lost change would never get there.
    await waitFor(() => mirrorEqualsSandbox(stack!), { timeoutMs: 20_000, what: "the mirror to equal the sandbox" }).catch(() => undefined);
    await expectMirrorEqualsSandbox(stack);
    expect(stack.sandbox.requestLog.filter((r) => r.status === 429)).toHaveLength(0);
  });

  it("the scheduled reconciliation catches what webhooks missed", async () => {
    stack = await startStack({ deliver: false, env: { RECONCILE_INTERVAL_SECONDS: "1" }, apiRate: 1200 });
    const order = stack.sandbox.actions.createOrder({ restaurantId: "rest_2" });
    await waitFor(() => mirrorEqualsSandbox(stack!), { what: "reconciliation to mirror every record" });
    expect(await stack.svc.service.mirror.get("orders", order.id)).toMatchObject({ id: order.id });
  });
});
