import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { createPostgresMirror, type MirrorRecord, type MirrorStore } from "../../src/mirror/mirror-store.js";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import type { Booking, Order } from "../../src/sandbox/records.js";
import { createApiClient } from "../../src/upstream/client.js";
import { refreshKind, type RefreshOutcome } from "../../src/sync/refresh-kind.js";
import { nextDue, createRefreshQueue, type RefreshNote, type RefreshQueue, type RefreshJobData } from "../../src/sync/refresh-queue.js";
import type { SyncedKind } from "../../src/mirror/kinds.js";
import { openTestDatabase, preferredDriver, type TestDatabase } from "../helpers/postgres.js";

// The planner against the sandbox over real HTTP, a real Redis and the test database. Costs are
// API calls counted from the sandbox's request log, never times.

let redis: Redis;
let queue: Queue<RefreshJobData>;
let prefix: string;
let database: TestDatabase;
let mirror: MirrorStore;
const sandboxes: Sandbox[] = [];
beforeEach(async () => {
  prefix = `test-planner-${randomUUID().slice(0, 8)}`;
  redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: null });
  queue = new Queue<RefreshJobData>("sync", { connection: redis, prefix });
  database = await openTestDatabase(preferredDriver());
  mirror = createPostgresMirror(database.db);
}, 60_000);
afterEach(async () => {
  for (const s of sandboxes.splice(0)) await s.close();
  await queue.obliterate({ force: true });
  await queue.close();
  await redis.quit();
  await database.close();
});

/** A sandbox with no webhook subscriber (history is made silently) and no rate limit in the way. */
async function upstream(restaurants: number, seed = 7): Promise<{ sandbox: Sandbox; url: string }> {
  const sandbox = createSandbox({ restaurants, seed, rateLimit: { max: 1_000_000, windowMs: 60_000 } });
  sandboxes.push(sandbox);
  return { sandbox, url: await sandbox.listen() };
}

/** Runs refresh jobs (as the sync worker would, ignoring backoff waits) until nothing is pending. */
async function refreshUntilSettled(
  deps: { url: string; apiKey: string; scheduler: RefreshQueue; kind: SyncedKind; upperBound?: string },
  rounds = 5,
): Promise<RefreshOutcome[]> {
  const api = createApiClient({ baseUrl: deps.url, apiKey: deps.apiKey, bookingsUpperBoundParam: deps.upperBound ?? "to" });
  const outcomes: RefreshOutcome[] = [];
  for (let i = 0; i < rounds; i++) {
    outcomes.push(
      await refreshKind({
        api,
        mirror,
        scheduler: deps.scheduler,
        logger: pino({ level: "silent" }),
        kind: deps.kind,
        maxPages: 10,
        giveUpMs: 600_000,
      }),
    );
    if ((await deps.scheduler.pending(deps.kind)).length === 0) break;
  }
  return outcomes;
}

/** A copy of a sandbox record as the mirror would hold it from an earlier sync. */
const asStored = (record: object) => JSON.parse(JSON.stringify(record)) as MirrorRecord;

const FORWARD = ["CONFIRMED", "PREPARING", "READY", "DELIVERED"] as const;

/** `size` orders of history, oldest first: finished ones (delivered, some cancelled, 1 % refunded), the newest 40 in flight. */
function makeHistory(sandbox: Sandbox, size: number): Order[] {
  const orders: Order[] = [];
  for (let i = 0; i < size; i++) {
    const order = sandbox.actions.createOrder({ paid: i % 3 !== 0 });
    const inFlight = i >= size - 40;
    const cancelled = !inFlight && i % 10 === 5;
    const steps = inFlight ? i % 4 : cancelled ? 1 : 4;
    for (const status of FORWARD.slice(0, steps)) sandbox.actions.updateOrderStatus(order.id, status);
    if (cancelled) sandbox.actions.updateOrderStatus(order.id, "CANCELLED");
    if (!inFlight && i % 100 === 7 && order.paidAt !== null) sandbox.actions.refundOrder(order.id);
    orders.push(order);
  }
  return orders;
}

/**
 * ~30 status changes of random orders over the whole history, each noted as its event would be:
 * refunds of old delivered orders (some with thin events, whose hints come from the mirror's
 * copy), in-flight orders moving on or cancelled. Returns the ids changed.
 */
async function makeChanges(sandbox: Sandbox, scheduler: RefreshQueue, history: Order[], seed: number): Promise<string[]> {
  let state = seed;
  const random = () => (state = (state * 48271) % 2147483647) / 2147483647;
  const note = (order: Order, thin: boolean): RefreshNote =>
    thin ? { eventId: `evt_${order.id}` } : { eventId: `evt_${order.id}`, status: order.status, createdAt: order.createdAt };
  const changed: string[] = [];
  const old = history.slice(0, -40).filter((o) => o.status === "DELIVERED" && o.paidAt !== null);
  for (let i = 0; i < 15; i++) {
    const order = old[Math.floor(random() * old.length)]!;
    if (order.status === "REFUNDED") continue;
    const thin = i % 3 === 0;
    // A thin event's hints come from the mirror's copy: the service has it from earlier syncs.
    if (thin) await mirror.upsert("orders", [asStored(order)], await mirror.clock());
    sandbox.actions.refundOrder(order.id);
    // order.refunded carries REFUNDED even when thin (sync/refresh-queue.ts createSyncHandlers).
    await scheduler.request(
      "orders",
      order.restaurantId,
      order.id,
      thin ? { ...note(order, true), status: "REFUNDED" } : note(order, false),
    );
    changed.push(order.id);
  }
  for (const order of history.slice(-40).slice(0, 15)) {
    const next = FORWARD.find((s) => FORWARD.indexOf(s) === FORWARD.indexOf(order.status as (typeof FORWARD)[number]) + 1) ?? "CONFIRMED";
    const thin = changed.length % 4 === 0;
    if (thin) await mirror.upsert("orders", [asStored(order)], await mirror.clock());
    sandbox.actions.updateOrderStatus(order.id, random() < 0.2 ? "CANCELLED" : next);
    await scheduler.request("orders", order.restaurantId, order.id, note(order, thin));
    changed.push(order.id);
  }
  return changed;
}

async function measureOrders(size: number): Promise<{ calls: number; events: number }> {
  const { sandbox, url } = await upstream(8);
  const history = makeHistory(sandbox, size);
  const scheduler = createRefreshQueue({ redis, queue, prefix: `${prefix}-${size}`, debounceMs: 60_000 });
  const changed = await makeChanges(sandbox, scheduler, history, 11);
  sandbox.requestLog.length = 0;
  await refreshUntilSettled({ url, apiKey: sandbox.apiKey, scheduler, kind: "orders" });
  // Every change reached the mirror.
  for (const id of changed) {
    const truth = sandbox.state.orders().find((o) => o.id === id)!;
    expect((await mirror.get("orders", id))?.status, id).toBe(truth.status);
  }
  expect(await scheduler.pending("orders")).toEqual([]);
  return { calls: sandbox.requestLog.length, events: changed.length };
}

describe("narrow reads chosen by the planner", () => {
  it("30 status changes spread over the history cost ≤ 1 call per event at 20,000 orders, at most twice the cost at 400", async () => {
    const small = await measureOrders(400);
    const large = await measureOrders(20_000);
    expect(small.events).toBeGreaterThanOrEqual(25);
    expect(large.calls / large.events).toBeLessThanOrEqual(1.0);
    expect(large.calls).toBeLessThanOrEqual(2 * small.calls);
  }, 240_000);

  it("an old booking's status change costs a call or two, not a walk through the booking history", async () => {
    const { sandbox, url } = await upstream(2);
    const diner = { name: "Ada", email: "ada@example.com" };
    const start = Date.parse("2024-01-01");
    const bookings = Array.from({ length: 1500 }, (_, i) =>
      sandbox.actions.createBooking({
        restaurantId: "rest_1",
        date: new Date(start + i * 43_200_000).toISOString().slice(0, 10),
        time: "19:00",
        partySize: 2,
        diner,
      }),
    );
    const scheduler = createRefreshQueue({ redis, queue, prefix, debounceMs: 60_000 });
    const [full, thin] = [bookings[200]!, bookings[900]!];
    // The thin one is known to the mirror from an earlier sync: its date comes from there.
    await mirror.upsert("bookings", [asStored(thin)], await mirror.clock());
    sandbox.actions.cancelBooking(full.id);
    sandbox.actions.cancelBooking(thin.id);
    await scheduler.request("bookings", "rest_1", full.id, { eventId: "evt_1", date: full.date });
    await scheduler.request("bookings", "rest_1", thin.id, { eventId: "evt_2" });
    sandbox.requestLog.length = 0;
    await refreshUntilSettled({ url, apiKey: sandbox.apiKey, scheduler, kind: "bookings" });
    expect((await mirror.get("bookings", full.id))?.status).toBe("CANCELLED");
    expect((await mirror.get("bookings", thin.id))?.status).toBe("CANCELLED");
    expect(sandbox.requestLog.length).toBeLessThanOrEqual(2);
    // Date windows, never the unfiltered list.
    for (const request of sandbox.requestLog) expect(request.query).toMatch(/from=\d{4}-\d{2}-\d{2}.*to=\d{4}-\d{2}-\d{2}/);
  }, 120_000);

  it("an upstream that ignores the upper date bound is caught from the data: the oldest-first list stops past the window", async () => {
    const { sandbox, url } = await upstream(1);
    const diner = { name: "Ada", email: "ada@example.com" };
    const start = Date.parse("2024-01-01");
    const bookings = Array.from({ length: 1500 }, (_, i) =>
      sandbox.actions.createBooking({
        restaurantId: "rest_1",
        date: new Date(start + i * 43_200_000).toISOString().slice(0, 10),
        time: "19:00",
        partySize: 2,
        diner,
      }),
    );
    const scheduler = createRefreshQueue({ redis, queue, prefix, debounceMs: 60_000 });
    const target = bookings[100]!;
    sandbox.actions.cancelBooking(target.id);
    await scheduler.request("bookings", "rest_1", target.id, { eventId: "evt_1", date: target.date });
    sandbox.requestLog.length = 0;
    // The sandbox does not know `until`: it answers everything from `from` on, by date ascending.
    const [outcome] = await refreshUntilSettled({ url, apiKey: sandbox.apiKey, scheduler, kind: "bookings", upperBound: "until" });
    expect(sandbox.requestLog[0]?.query).toContain("until=");
    expect((await mirror.get("bookings", target.id))?.status).toBe("CANCELLED");
    // Found on the first page; the walk stopped there, not at the page cap or the history's end.
    expect(outcome?.calls).toBe(1);
    expect(sandbox.requestLog).toHaveLength(1);
  }, 120_000);

  it("booking events over two weeks and many restaurants share one window read when the mirror says it is no dearer", async () => {
    const { sandbox, url } = await upstream(10);
    // 10 bookings a day for 15 days (150: two pages company-wide), all in the mirror from an earlier sync.
    const bookings = await bookingsSynced(sandbox, { count: 150, restaurants: 10, days: 15 });
    // Five changes on days 0, 3, 7, 10 and 14, in five restaurants: five 3-day windows of one page each apart.
    const changed = [0, 48, 97, 145, 149].map((i) => bookings[i]!);
    await cancelAndRefresh(sandbox, url, changed);
    // One company-wide read of the merged window (day −1 to day 15: two pages), not five.
    expect(sandbox.requestLog.length).toBeLessThanOrEqual(2);
    for (const request of sandbox.requestLog) expect(request.query).not.toContain("restaurantId");
  }, 120_000);

  it("booking events in a busy company's few restaurants read those restaurants' windows, not the company's", async () => {
    const { sandbox, url } = await upstream(30);
    // 120 bookings a day for 5 days over 30 restaurants: a 3-day window is 360 company-wide (four pages), 12 in one restaurant.
    const bookings = await bookingsSynced(sandbox, { count: 600, restaurants: 30, days: 5 });
    const changed = [bookings[2]!, bookings[3]!, bookings[7]!];
    expect(new Set(changed.map((b) => b.restaurantId)).size).toBe(3);
    await cancelAndRefresh(sandbox, url, changed);
    // One read per restaurant (a page each), not the company's window (pages of 100 up to the dates).
    expect(sandbox.requestLog).toHaveLength(3);
    for (const request of sandbox.requestLog) expect(request.query).toContain("restaurantId");
  }, 120_000);

  it("events over many restaurants at once cost far fewer calls than there are restaurants", async () => {
    const { sandbox, url } = await upstream(20);
    const scheduler = createRefreshQueue({ redis, queue, prefix, debounceMs: 60_000 });
    const restaurants = sandbox.state.restaurants();
    for (const { id } of restaurants) {
      const order = sandbox.actions.createOrder({ restaurantId: id });
      await scheduler.request("orders", id, order.id, { eventId: `evt_${order.id}`, status: "PENDING", createdAt: order.createdAt });
      sandbox.actions.updateOrderStatus(order.id, "CONFIRMED");
      await scheduler.request("orders", id, order.id, { eventId: `evt_2${order.id}`, status: "CONFIRMED", createdAt: order.createdAt });
    }
    sandbox.requestLog.length = 0;
    const [outcome] = await refreshUntilSettled({ url, apiKey: sandbox.apiKey, scheduler, kind: "orders" });
    expect(outcome?.found).toBe(restaurants.length);
    // 40 events over 20 restaurants: one company-wide read of the CONFIRMED orders.
    expect(sandbox.requestLog.length).toBeLessThanOrEqual(2);
    expect(sandbox.requestLog[0]?.query).not.toContain("restaurantId");
    for (const { id } of restaurants)
      expect((await mirror.list("orders", { restaurantId: id, status: "CONFIRMED" })).data.length).toBeGreaterThan(0);
  }, 120_000);
});

describe("an id the upstream does not list", () => {
  it("stays pending with backoff, is reported after the give-up time, and never holds up the other ids", async () => {
    const { sandbox, url } = await upstream(2);
    let now = Date.parse("2026-11-24T10:00:00Z");
    const clock = () => now;
    const scheduler = createRefreshQueue({ redis, queue, prefix, debounceMs: 60_000, now: clock });
    const api = createApiClient({ baseUrl: url, apiKey: sandbox.apiKey });
    const unlisted: SyncedKind[] = [];
    const run = () =>
      refreshKind({
        api,
        mirror,
        scheduler,
        logger: pino({ level: "silent" }),
        kind: "orders",
        maxPages: 10,
        giveUpMs: 600_000,
        now: clock,
        onUnlisted: (kind) => unlisted.push(kind),
      });
    const real = sandbox.actions.createOrder({ restaurantId: "rest_1" });
    await scheduler.request("orders", "rest_1", "ord_ghost", {
      eventId: "evt_ghost",
      status: "PENDING",
      createdAt: new Date(now).toISOString(),
    });
    await scheduler.request("orders", "rest_1", real.id, { eventId: "evt_real", status: "PENDING", createdAt: real.createdAt });

    const first = await run();
    expect(first.found).toBe(1);
    expect(first.missing).toEqual(["ord_ghost"]);
    expect(await mirror.get("orders", real.id)).toBeDefined();
    expect((await scheduler.pending("orders")).map((p) => p.id)).toEqual(["ord_ghost"]);
    // The job's next run is due when the backoff (1 s) ends.
    expect(nextDue(await scheduler.pending("orders"), now)).toBe(now + 1000);

    // Within the backoff: nothing read.
    sandbox.requestLog.length = 0;
    now += 500;
    expect((await run()).calls).toBe(0);
    expect(sandbox.requestLog).toHaveLength(0);

    // A new order meanwhile is not held up by the waiting one.
    const other = sandbox.actions.createOrder({ restaurantId: "rest_2" });
    await scheduler.request("orders", "rest_2", other.id, { eventId: "evt_other", status: "PENDING", createdAt: other.createdAt });
    expect((await run()).found).toBe(1);
    expect(await mirror.get("orders", other.id)).toBeDefined();

    // After the backoff it is looked for again, and missed again: the next wait is longer.
    now += 1000;
    expect((await run()).missing).toEqual(["ord_ghost"]);
    const note = (await scheduler.pending("orders")).find((p) => p.id === "ord_ghost")?.note;
    expect(note?.misses).toBe(2);
    expect(note?.retryAt).toBe(now + 2000);

    // Past the give-up time: reported (row, metric), forgotten, never looked for again.
    now += 600_000;
    const last = await run();
    expect(last.unlisted).toEqual(["ord_ghost"]);
    expect(unlisted).toEqual(["orders"]);
    expect(await scheduler.pending("orders")).toEqual([]);
    const rows = await mirror.unlisted("orders");
    expect(rows).toMatchObject([{ kind: "orders", id: "ord_ghost", restaurantId: "rest_1", eventIds: ["evt_ghost"], attempts: 3 }]);
    expect(rows[0]?.firstNotedAt.getTime()).toBe(Date.parse("2026-11-24T10:00:00Z"));
    sandbox.requestLog.length = 0;
    expect((await run()).calls).toBe(0);
  }, 120_000);
});

describe("the mirror's counts a refresh job prices its reads by", () => {
  it("are one query for all of the job's ids, and one more per round that moves ids on to a new read, never a few per id", async () => {
    const { sandbox, url } = await upstream(8);
    const history = makeHistory(sandbox, 400);
    const scheduler = createRefreshQueue({ redis, queue, prefix, debounceMs: 60_000 });
    const changed = await makeChanges(sandbox, scheduler, history, 11);
    let counts = 0;
    const counting: MirrorStore = {
      ...mirror,
      countOrdersNewer: (...args: Parameters<MirrorStore["countOrdersNewer"]>) => {
        counts++;
        return mirror.countOrdersNewer(...args);
      },
    };
    const api = createApiClient({ baseUrl: url, apiKey: sandbox.apiKey });
    const outcome = await refreshKind({
      api,
      mirror: counting,
      scheduler,
      logger: pino({ level: "silent" }),
      kind: "orders",
      maxPages: 10,
      giveUpMs: 600_000,
    });
    expect(outcome.found).toBe(changed.length);
    expect(counts).toBeLessThanOrEqual(outcome.reads + 1);
  }, 120_000);
});

describe("a read longer than its page budget", () => {
  it("goes on where the last job stopped on a cold mirror, so the oldest orders' changes arrive; an id never found is still given up", async () => {
    const { sandbox, url } = await upstream(3);
    const history = makeHistory(sandbox, 700);
    let now = Date.parse("2026-11-24T10:00:00Z");
    const clock = () => now;
    const scheduler = createRefreshQueue({ redis, queue, prefix, debounceMs: 60_000, now: clock });
    const api = createApiClient({ baseUrl: url, apiKey: sandbox.apiKey });
    const oldest = history.filter((o) => o.status === "DELIVERED" && o.paidAt !== null).slice(0, 3);
    for (const order of oldest) {
      sandbox.actions.refundOrder(order.id);
      // Thin events of a change the mirror (empty: before the first import) has no copy of: the unfiltered list.
      await scheduler.request("orders", order.restaurantId, order.id, { eventId: `evt_${order.id}` });
    }
    await scheduler.request("orders", "rest_1", "ord_ghost", { eventId: "evt_ghost" });
    sandbox.requestLog.length = 0;
    const run = () =>
      refreshKind({
        api,
        mirror,
        scheduler,
        logger: pino({ level: "silent" }),
        kind: "orders",
        maxPages: 2,
        giveUpMs: 600_000,
        now: clock,
      });
    // 700 orders and the sample's, newest first, 100 a page; 2 pages a job.
    const pages = Math.ceil(sandbox.state.orders().length / 100);
    for (let job = 0; job < Math.ceil(pages / 2); job++) {
      await run();
      now += 60_000;
    }
    for (const order of oldest) expect((await mirror.get("orders", order.id))?.status, order.id).toBe("REFUNDED");
    // Each page once: no job read the list's top again.
    const reads = sandbox.requestLog.filter((r) => r.path === "/api/v1/orders").map((r) => r.query);
    expect(reads).toHaveLength(pages);
    expect(new Set(reads).size).toBe(pages);
    expect((await scheduler.pending("orders")).map((p) => p.id)).toEqual(["ord_ghost"]);
    // The id no page held: missed at the list's end, then, past the give-up time, reported.
    now += 600_000;
    expect((await run()).unlisted).toEqual(["ord_ghost"]);
    expect(await scheduler.pending("orders")).toEqual([]);
  }, 120_000);
});

describe("reads priced by estimated pages (the bench's shape)", () => {
  /**
   * The bench's `syncCost` workload: 40 restaurants, 20,000 orders over a year, the mirror holding
   * them all; 12 refunds of old orders spread over the whole history and 6 new orders moved on.
   */
  async function measureCompany(): Promise<{ calls: number; events: number }> {
    const sandbox = createSandbox({
      seed: 22,
      restaurants: 40,
      history: { orders: 20_000, days: 365 },
      rateLimit: { max: 1_000_000, windowMs: 60_000 },
    });
    sandboxes.push(sandbox);
    const url = await sandbox.listen();
    const all = sandbox.state.orders();
    for (let i = 0; i < all.length; i += 1000) await mirror.upsert("orders", all.slice(i, i + 1000).map(asStored), await mirror.clock());
    const scheduler = createRefreshQueue({ redis, queue, prefix: `${prefix}-company`, debounceMs: 60_000 });
    const refundable = all.filter((o) => o.status === "DELIVERED" && o.paidAt).sort((x, y) => (x.createdAt < y.createdAt ? -1 : 1));
    // Paced as the bench paces them (an event every half second): a refresh job takes the few that its debounce gathered.
    const steps: (() => Order)[] = [];
    for (let i = 0; i < 12; i++)
      steps.push(() => sandbox.actions.refundOrder(refundable[Math.floor(((i + 0.5) * refundable.length) / 12)]!.id));
    for (let i = 0; i < 6; i++) {
      let id = "";
      steps.splice(i * 3, 0, () => {
        const created = sandbox.actions.createOrder({ restaurantId: `rest_${((i * 7) % 40) + 1}`, paid: true });
        id = created.id;
        return created;
      });
      steps.push(() => sandbox.actions.updateOrderStatus(id, "CONFIRMED"));
      steps.push(() => sandbox.actions.updateOrderStatus(id, "PREPARING"));
    }
    sandbox.requestLog.length = 0;
    const events: Order[] = [];
    for (const [i, step] of steps.entries()) {
      const order = structuredClone(step());
      events.push(order);
      await scheduler.request("orders", order.restaurantId, order.id, {
        eventId: `evt_${i}`,
        status: order.status,
        createdAt: order.createdAt,
      });
      if (i % 3 === 2) await refreshUntilSettled({ url, apiKey: sandbox.apiKey, scheduler, kind: "orders" });
    }
    for (const order of events) {
      const truth = sandbox.state.orders().find((o) => o.id === order.id)!;
      expect((await mirror.get("orders", order.id))?.status, order.id).toBe(truth.status);
    }
    expect(await scheduler.pending("orders")).toEqual([]);
    return { calls: sandbox.requestLog.length, events: events.length };
  }

  it("refunds of old orders over 40 restaurants and 20,000 orders cost ≤ 1 call per event", async () => {
    // Before pricing by pages: 33 calls, company-wide REFUNDED walks of up to 6 pages for 2 or 3 ids.
    const { calls, events } = await measureCompany();
    expect(events).toBe(30);
    expect(calls / events).toBeLessThanOrEqual(1.0);
  }, 240_000);
});

/** `count` bookings spread over `restaurants` and `days` from 2026-12-01, also in the mirror (an earlier sync). */
async function bookingsSynced(sandbox: Sandbox, opts: { count: number; restaurants: number; days: number }): Promise<Booking[]> {
  const diner = { name: "Ada", email: "ada@example.com" };
  const day = (n: number) => new Date(Date.parse("2026-12-01") + n * 86_400_000).toISOString().slice(0, 10);
  const bookings = Array.from({ length: opts.count }, (_, i) =>
    sandbox.actions.createBooking({
      restaurantId: `rest_${(i % opts.restaurants) + 1}`,
      date: day(i % opts.days),
      time: "19:00",
      partySize: 2,
      diner,
    }),
  );
  await mirror.upsert("bookings", bookings.map(asStored), await mirror.clock());
  return bookings;
}

/** Cancels the bookings upstream, notes their events, refreshes until settled (request log reset first) and checks all were read. */
async function cancelAndRefresh(sandbox: Sandbox, url: string, changed: readonly Booking[]): Promise<void> {
  const scheduler = createRefreshQueue({ redis, queue, prefix, debounceMs: 60_000 });
  for (const b of changed) {
    sandbox.actions.cancelBooking(b.id);
    await scheduler.request("bookings", b.restaurantId, b.id, { eventId: `evt_${b.id}`, date: b.date });
  }
  sandbox.requestLog.length = 0;
  const [outcome] = await refreshUntilSettled({ url, apiKey: sandbox.apiKey, scheduler, kind: "bookings" });
  expect(outcome?.found).toBe(changed.length);
  for (const b of changed) expect((await mirror.get("bookings", b.id))?.status).toBe("CANCELLED");
}
