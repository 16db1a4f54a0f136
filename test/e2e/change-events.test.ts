import { createServer, type Server } from "node:http";
import { isDeepStrictEqual } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import type { ChangeEvent } from "../../src/events/catalog.js";
import type { EventHandlers } from "../../src/worker/handlers.js";
import { TEST_SECRET } from "../helpers/edge.js";
import { nextJob, nextFinished } from "../helpers/job-events.js";
import { importAll } from "../helpers/import-all.js";
import { startStack, type Stack } from "../helpers/stack.js";
import { RECONCILE_JOBS } from "../../src/sync/reconcile-jobs.js";
import { waitFor } from "../helpers/wait-for.js";
import { onChange } from "../../src/worker/handlers.js";
import { readRecordStory } from "../../src/mirror/record-story.js";

let stack: Stack | undefined;
let capture: Server | undefined;
afterEach(async () => {
  capture?.close();
  capture = undefined;
  await stack?.stop();
  stack = undefined;
});

/** Handlers that keep every change event they get (by delivery; a redelivered job would show twice). */
function collector() {
  const events: ChangeEvent[] = [];
  const keep = (e: ChangeEvent) => void events.push(structuredClone(e));
  const handlers: EventHandlers = { "change.order": keep, "change.booking": keep, "change.menu_item": keep };
  return { events, handlers };
}

const metric = async (s: Stack, line: string) => {
  const text = (await s.svc.service.metrics.render()).body;
  const found = text.split("\n").find((l) => l.startsWith(line + " "));
  return found ? Number(found.slice(line.length + 1)) : 0;
};

/** A deterministic shuffle (mulberry32), so a failure replays the same order. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  let a = seed;
  const next = () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/**
 * The change events of one record, checked against what really happened: starting from what the
 * mirror held first (`start`), each `before` is the previous `after`; `changed` names exactly the
 * fields that differ; every `after` is a state from the sandbox's history, later than the last;
 * the last `after` is the record's final state.
 */
function expectChain(events: ChangeEvent[], start: unknown, history: unknown[], id: string) {
  const chain: ChangeEvent[] = [];
  let current = start;
  const left = [...events];
  while (left.length > 0) {
    const i = left.findIndex((e) => isDeepStrictEqual(e.data.before, current));
    expect(i, `${id}: a change whose before is ${JSON.stringify(current)}`).toBeGreaterThanOrEqual(0);
    const [e] = left.splice(i, 1);
    chain.push(e!);
    current = e!.data.after;
  }
  // The write order (the database clock at each insert) is the chain's order.
  expect(chain.map((e) => e.createdAt)).toEqual([...chain.map((e) => e.createdAt)].sort());
  let at = start === null ? -1 : history.findIndex((h) => isDeepStrictEqual(h, start));
  for (const e of chain) {
    const { before, after, changed } = e.data;
    expect(isDeepStrictEqual(before, after), `${id}: a change that changes nothing`).toBe(false);
    const keys = [...new Set([...Object.keys(before ?? {}), ...Object.keys(after)])];
    const differing = keys.filter(
      (k) => !isDeepStrictEqual((before as Record<string, unknown> | null)?.[k], (after as Record<string, unknown>)[k]),
    );
    expect([...changed].sort(), `${id}: changed`).toEqual(differing.sort());
    const next = history.findIndex((h, n) => n > at && isDeepStrictEqual(h, after));
    expect(next, `${id}: after is a later state from the sandbox's history`).toBeGreaterThan(at);
    at = next;
  }
  expect(current, `${id}: the last after is the sandbox's final state`).toEqual(history[history.length - 1]);
}

describe("change events: handlers get what actually changed in the mirror", () => {
  it("a burst of duplicated, shuffled and stale deliveries yields exactly the real changes, as a chain per record", async () => {
    const { events, handlers } = collector();
    stack = await startStack({ deliver: false, handlers: [handlers], apiRate: 1200 });
    const s = stack;
    // A first import that emits nothing: the chains start from what it stored.
    await importAll({ api: s.svc.service.worker!.api!, mirror: s.svc.service.mirror, db: s.svc.database.db });
    const start = new Map<string, unknown>();
    for (const kind of ["orders", "bookings", "menu-items"] as const)
      for (const r of await s.svc.service.mirror.all(kind)) start.set(r.id, r);

    // Capture the sandbox's deliveries, to send them back in a hostile order.
    const captured: { body: string; signature: string }[] = [];
    capture = createServer((req, res) => {
      let body = "";
      req.on("data", (d: Buffer) => (body += d.toString()));
      req.on("end", () => {
        captured.push({ body, signature: String(req.headers["x-svc-signature"]) });
        res.end("ok");
      });
    });
    await new Promise<void>((r) => capture!.listen(0, "127.0.0.1", () => r()));
    s.sandbox.addWebhook({ url: `http://127.0.0.1:${(capture.address() as { port: number }).port}/`, secret: TEST_SECRET });
    const post = (d: { body: string; signature: string }) =>
      fetch(`${s.svc.url}/webhooks`, {
        method: "POST",
        body: d.body,
        headers: { "content-type": "application/json", "x-svc-signature": d.signature },
      }).then((r) => r.status);
    /** Every delivery so far (earlier steps' included: stale now), twice each, shuffled. */
    const replayAll = async (seed: number) => {
      await s.sandbox.idle();
      const statuses = await Promise.all(
        shuffled(
          captured.flatMap((d) => [d, d]),
          seed,
        ).map(post),
      );
      expect(new Set(statuses)).toEqual(new Set([200]));
      await s.settled();
    };

    const a = s.sandbox.actions;
    const seeded = s.sandbox.state.orders().find((o) => o.status === "PENDING" && o.restaurantId === "rest_1")!;
    const menuItem = s.sandbox.state.menuItems()[0]!;
    const booking = s.sandbox.state.bookings().find((b) => b.status === "CONFIRMED")!;
    // Step 1: new records, a seeded one moves, a menu item changes.
    const orders = [
      a.createOrder({ restaurantId: "rest_1", paid: true }),
      a.createOrder({ restaurantId: "rest_2", paid: true }),
      a.createOrder({ restaurantId: "rest_1" }),
    ];
    a.updateOrderStatus(seeded.id, "CONFIRMED");
    a.updateMenuItem(menuItem.id, { price: 12.5, stock: 7 });
    await replayAll(1);
    // Step 2: two upstream steps between two reads are one observed change.
    for (const o of orders) {
      a.updateOrderStatus(o.id, "CONFIRMED");
      a.updateOrderStatus(o.id, "PREPARING");
    }
    a.cancelBooking(booking.id);
    a.updateMenuItem(menuItem.id, { stock: 6 });
    await replayAll(2);
    // Step 3.
    a.updateOrderStatus(orders[0]!.id, "READY");
    a.updateOrderStatus(orders[1]!.id, "CANCELLED");
    a.refundOrder(orders[1]!.id, "closed early");
    a.updateOrderStatus(seeded.id, "CANCELLED");
    await replayAll(3);

    const touched = [...orders.map((o) => o.id), seeded.id, menuItem.id, booking.id];
    const byRecord = new Map<string, ChangeEvent[]>();
    for (const e of events) byRecord.set(e.data.id, [...(byRecord.get(e.data.id) ?? []), e]);
    // Only the records that changed have change events; every change came from a webhook refresh.
    expect([...byRecord.keys()].sort()).toEqual([...touched].sort());
    expect(new Set(events.map((e) => e.data.source))).toEqual(new Set(["webhook"]));
    expect(new Set(events.map((e) => e.id)).size, "each change delivered once here (no crash)").toBe(events.length);
    for (const id of touched) expectChain(byRecord.get(id)!, start.get(id) ?? null, s.sandbox.state.history(id), id);
    // Several observed changes per record: the burst did not collapse into one write.
    expect(byRecord.get(orders[1]!.id)!.length).toBeGreaterThanOrEqual(3);

    // Every delivery once more: nothing changes, so nothing is produced.
    const before = events.length;
    await replayAll(4);
    expect(events.length).toBe(before);
    expect(await metric(s, 'svc_mirror_changes_total{kind="order",source="webhook"}')).toBe(
      events.filter((e) => e.type === "change.order").length,
    );
    expect(await metric(s, 'svc_missed_webhooks_total{kind="order"}')).toBe(0);
  });

  it("a change made with its webhook suppressed reaches handlers as source reconcile after a full pass, and counts as a missed webhook", async () => {
    const { events, handlers } = collector();
    stack = await startStack({ handlers: [handlers], apiRate: 1200 });
    const s = stack;
    await importAll({ api: s.svc.service.worker!.api!, mirror: s.svc.service.mirror, db: s.svc.database.db });
    // Different restaurants: a webhook refresh re-reads its restaurant's whole page, and would find
    // (as source webhook) a silent change to another order of the same restaurant.
    const pending = s.sandbox.state.orders().filter((o) => o.status === "PENDING");
    const quiet = pending.find((o) => o.restaurantId === "rest_1");
    const loud = pending.find((o) => o.restaurantId === "rest_2");
    const stored = await s.svc.service.mirror.get("orders", quiet!.id);

    // Over the sandbox's HTTP control surface: the change happens, no webhook is sent.
    const res = await fetch(`${s.sandbox.url}/_sandbox/actions/updateOrderStatus`, {
      method: "POST",
      body: JSON.stringify({ id: quiet!.id, status: "CONFIRMED", silent: true }),
    });
    expect(res.status).toBe(200);
    s.sandbox.actions.updateOrderStatus(loud!.id, "CONFIRMED");
    await s.settled();
    const history = (await (await fetch(`${s.sandbox.url}/_sandbox/history/${quiet!.id}`)).json()) as { status: string }[];
    expect(history.map((h) => h.status)).toEqual(["PENDING", "CONFIRMED"]);
    expect(events.map((e) => [e.data.id, e.data.source])).toEqual([[loud!.id, "webhook"]]);
    expect(await s.svc.service.mirror.get("orders", quiet!.id)).toEqual(stored);

    // What the operator API enqueues: a full pass now (the mirror held the kind, so not a first import).
    await s.svc.service.worker!.syncQueue.add(RECONCILE_JOBS.full, { force: true });
    await s.settled();
    const found = events.filter((e) => e.data.id === quiet!.id);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({
      type: "change.order",
      data: { kind: "order", source: "reconcile", before: stored, after: history[1], changed: ["status"] },
    });
    // The sweep re-read the other order too: no change, so no event.
    expect(events).toHaveLength(2);
    expect(await metric(s, 'svc_missed_webhooks_total{kind="order"}')).toBe(1);
    expect(await metric(s, 'svc_mirror_changes_total{kind="order",source="reconcile"}')).toBe(1);
  });

  it("a sweep that finds a change an event already named (its refresh still pending) counts it as webhook", async () => {
    const { events, handlers } = collector();
    // The refresh waits a minute: the reconcile sweep reads the record first.
    stack = await startStack({ handlers: [handlers], env: { SYNC_DEBOUNCE_MS: "60000" }, apiRate: 1200 });
    const s = stack;
    await importAll({ api: s.svc.service.worker!.api!, mirror: s.svc.service.mirror, db: s.svc.database.db });
    const order = s.sandbox.state.orders().find((o) => o.status === "PENDING")!;
    const eventHandled = nextFinished(s.svc.service.worker!, "completed", (e) => e.type === "order.status_changed");
    s.sandbox.actions.updateOrderStatus(order.id, "CONFIRMED");
    await eventHandled;
    const swept = nextJob(s.svc.service.worker!.syncWorker, "completed", (j) => j.name === RECONCILE_JOBS.full);
    await s.svc.service.worker!.syncQueue.add(RECONCILE_JOBS.full, { force: true });
    await swept;
    await waitFor(() => events.length === 1, { what: "the change event" });
    expect(events[0]!.data).toMatchObject({ id: order.id, source: "webhook", changed: ["status"] });
    expect(await metric(s, 'svc_missed_webhooks_total{kind="order"}')).toBe(0);
  });

  it("a change no handler accepts (its source filtered out) is never an event: not queued, run or logged; its record's story keeps it", async () => {
    const events: ChangeEvent[] = [];
    // The only change handler takes live webhook changes: a missed webhook's change reaches nobody.
    const handlers = onChange("order", { field: "status", source: "webhook" }, (e) => void events.push(structuredClone(e)));
    stack = await startStack({ handlers: [handlers], apiRate: 1200 });
    const s = stack;
    await importAll({ api: s.svc.service.worker!.api!, mirror: s.svc.service.mirror, db: s.svc.database.db });
    const pending = s.sandbox.state.orders().filter((o) => o.status === "PENDING");
    const quiet = pending.find((o) => o.restaurantId === "rest_1")!;
    const loud = pending.find((o) => o.restaurantId === "rest_2")!;
    const res = await fetch(`${s.sandbox.url}/_sandbox/actions/updateOrderStatus`, {
      method: "POST",
      body: JSON.stringify({ id: quiet.id, status: "CONFIRMED", silent: true }),
    });
    expect(res.status).toBe(200);
    // A source the handler accepts: one event, queued, run and logged.
    s.sandbox.actions.updateOrderStatus(loud.id, "CONFIRMED");
    await s.settled();
    expect(events.map((e) => [e.data.id, e.data.source])).toEqual([[loud.id, "webhook"]]);

    await s.svc.service.worker!.syncQueue.add(RECONCILE_JOBS.full, { force: true });
    await s.settled();
    // The full pass found the silent change (source reconcile, a missed webhook, still counted)...
    expect(await s.svc.service.mirror.get("orders", quiet.id)).toMatchObject({ status: "CONFIRMED" });
    expect(await metric(s, 'svc_missed_webhooks_total{kind="order"}')).toBe(1);
    // ...and nobody receives it: no handler ran, no job was queued, the event log holds no change of it.
    expect(events).toHaveLength(1);
    const logged = await s.svc.database.db.selectFrom("events").select(["id", "payload"]).where("type", "like", "change.%").execute();
    expect(logged.map((r) => r.id)).toEqual([events[0]!.id]);
    const story = (await readRecordStory(s.svc.database.db, "orders", quiet.id, { timeoutMs: 5000 }))!;
    const change = story.timeline.find((e) => e.entry === "change")!;
    expect(change).toMatchObject({ source: "reconcile", event: false, diff: [{ field: "status", before: "PENDING", after: "CONFIRMED" }] });
    expect(await s.svc.service.worker!.eventsQueue.getJob(change.eventId)).toBeUndefined();
    expect(story.record?.lastChange).toMatchObject({ eventId: change.eventId, source: "reconcile" });
  });
});
