import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createSandbox, type Sandbox, type SandboxOptions } from "../../src/sandbox/index.js";
import { SandboxStateFileError } from "../../src/sandbox/state-file.js";
import { waitFor } from "../helpers/wait-for.js";

// The dev stack keeps its sandbox in its data dir (`keep`), as it keeps its database: a restart
// continues where the last run stopped, so the mirror kept in the database and the sandbox agree.

let opened: Sandbox[] = [];
afterEach(async () => {
  await Promise.all(opened.map((s) => s.close()));
  opened = [];
});

const tempDir = () => mkdtempSync(join(tmpdir(), "svc-sandbox-keep-"));

async function start(options: SandboxOptions) {
  const sandbox = createSandbox({ apiKeys: ["svc_live_sandbox_restart_test_key"], ...options });
  opened.push(sandbox);
  return { sandbox, url: await sandbox.listen() };
}

async function stop(sandbox: Sandbox) {
  await sandbox.close();
  opened = opened.filter((s) => s !== sandbox);
}

/** Every id a sandbox holds: orders (and their items), bookings, menu items, reviews. */
function idsOf(sandbox: Sandbox): Set<string> {
  const { state } = sandbox;
  return new Set([
    ...state.orders().flatMap((o) => [o.id, ...o.items.map((i) => i.id)]),
    ...state.bookings().map((b) => b.id),
    ...state.menuItems().map((m) => m.id),
    ...state.reviews().map((r) => r.id),
  ]);
}

/** A few changes of every kind, as the simulation makes them. */
function someChanges(sandbox: Sandbox) {
  const { actions } = sandbox;
  const created = Array.from({ length: 20 }, () => actions.createOrder({ paid: true }));
  actions.updateOrderStatus(created[0]!.id, "CONFIRMED");
  actions.refundOrder(created[1]!.id, "cold soup");
  const booking = actions.createBooking({
    restaurantId: "rest_1",
    date: "2026-12-24",
    time: "19:30",
    partySize: 4,
    diner: { name: "Ada", email: "ada@example.com" },
  });
  actions.cancelBooking(booking.id);
  actions.createReview({ restaurantId: "rest_2", rating: 5 });
  actions.updateMenuItem(sandbox.state.menuItems()[0]!.id, { price: 9.5 });
  return { changedOrder: created[0]!.id, booking: booking.id };
}

const listOrders = async (url: string, query = "") =>
  (await (
    await fetch(`${url}/api/v1/orders${query}`, { headers: { authorization: "Bearer svc_live_sandbox_restart_test_key" } })
  ).json()) as { data: { id: string; createdAt: string }[] };

describe("sandbox kept across runs (keep: { dir })", () => {
  it("started again over the same dir serves the last run's records, lists and histories, and its new records take ids none of them had", async () => {
    const dir = tempDir();
    const first = await start({ keep: { dir } });
    const { changedOrder, booking } = someChanges(first.sandbox);
    const before = {
      restaurants: first.sandbox.state.restaurants(),
      orders: first.sandbox.state.orders(),
      bookings: first.sandbox.state.bookings(),
      menuItems: first.sandbox.state.menuItems(),
      reviews: first.sandbox.state.reviews(),
    };
    const historyBefore = first.sandbox.state.history(changedOrder);
    const listedBefore = await listOrders(first.url, "?limit=100");
    const oldIds = idsOf(first.sandbox);
    await stop(first.sandbox);

    const second = await start({ keep: { dir } });
    expect(second.sandbox.state.restaurants()).toEqual(before.restaurants);
    expect(second.sandbox.state.orders()).toEqual(before.orders);
    expect(second.sandbox.state.bookings()).toEqual(before.bookings);
    expect(second.sandbox.state.menuItems()).toEqual(before.menuItems);
    expect(second.sandbox.state.reviews()).toEqual(before.reviews);
    expect(second.sandbox.state.history(changedOrder)).toEqual(historyBefore);
    expect(second.sandbox.state.history(changedOrder)).toHaveLength(2);
    expect(second.sandbox.state.history(booking).map((b) => (b as { status: string }).status)).toEqual(["CONFIRMED", "CANCELLED"]);
    expect(await listOrders(second.url, "?limit=100")).toEqual(listedBefore);

    someChanges(second.sandbox);
    const newIds = [...idsOf(second.sandbox)].filter((id) => !oldIds.has(id));
    expect(newIds.length).toBeGreaterThan(20);
    const created = second.sandbox.actions.createOrder({});
    expect(oldIds.has(created.id)).toBe(false);
    // A new order is the newest: its stamp comes after every kept one, whatever the clock says.
    expect((await listOrders(second.url, "?limit=1")).data[0]!.id).toBe(created.id);
    const secondState = second.sandbox.state.orders();
    await stop(second.sandbox);

    const third = await start({ keep: { dir } });
    expect(third.sandbox.state.orders()).toEqual(secondState);
  });

  it("after a crash (its last save older than its last records), the next run's ids differ from every id the crashed run gave", async () => {
    const dir = tempDir();
    await stop((await start({ keep: { dir } })).sandbox);
    // A run that never saves after loading (an hour between saves), then dies: copied as it is on disk.
    const crashed = await start({ keep: { dir, saveIntervalMs: 3_600_000 } });
    const lost = Array.from({ length: 50 }, () => crashed.sandbox.actions.createOrder({}));
    const onDisk = tempDir();
    cpSync(dir, onDisk, { recursive: true });
    await stop(crashed.sandbox);

    const next = await start({ keep: { dir: onDisk } });
    const lostIds = new Set(lost.flatMap((o) => [o.id, ...o.items.map((i) => i.id)]));
    expect(next.sandbox.state.orders().filter((o) => lostIds.has(o.id))).toEqual([]); // the crash lost them
    const made = Array.from({ length: 50 }, () => next.sandbox.actions.createOrder({}));
    expect(made.flatMap((o) => [o.id, ...o.items.map((i) => i.id)]).filter((id) => lostIds.has(id))).toEqual([]);
  });

  it("passes over the ids of the records it holds when its id counter was lost", async () => {
    const dir = tempDir();
    const first = await start({ keep: { dir } });
    someChanges(first.sandbox);
    await stop(first.sandbox);
    const held = new Set([...idsOf((await start({ keep: { dir } })).sandbox)].filter((id) => !id.startsWith("oi_")));
    await Promise.all(opened.map((s) => stop(s)));
    rmSync(join(dir, "sandbox-ids.json"));
    const next = await start({ keep: { dir } });
    const made = Array.from({ length: 100 }, () => next.sandbox.actions.createOrder({}).id);
    expect(made.filter((id) => held.has(id))).toEqual([]);
  });

  it("saves while it runs, not only at close", async () => {
    const dir = tempDir();
    const { sandbox } = await start({ keep: { dir, saveIntervalMs: 20 } });
    const order = sandbox.actions.createOrder({});
    await waitFor(() => readFileSync(join(dir, "sandbox-state.json"), "utf8").includes(order.id), { what: "the order in the saved state" });
  });

  it("with fresh, seeds anew, and its ids still differ from the earlier runs'", async () => {
    const dir = tempDir();
    const first = await start({ keep: { dir } });
    someChanges(first.sandbox);
    const oldIds = idsOf(first.sandbox);
    await stop(first.sandbox);
    const fresh = await start({ keep: { dir, fresh: true } });
    expect(fresh.sandbox.state.orders()).toHaveLength(36); // the sample: 3 restaurants, 12 orders each
    expect([...idsOf(fresh.sandbox)].filter((id) => oldIds.has(id))).toEqual([]);
    await stop(fresh.sandbox);
    expect((await start({ keep: { dir } })).sandbox.state.orders()).toHaveLength(36);
  });

  it("keeps the newest 10,000 orders of a long run, so the saved state stays bounded", async () => {
    const dir = tempDir();
    const first = await start({ keep: { dir } });
    first.sandbox.silently(() => {
      for (let i = 0; i < 10_040; i++) first.sandbox.actions.createOrder({});
    });
    const newest = (await listOrders(first.url, "?limit=100")).data.map((o) => o.id);
    const total = first.sandbox.state.orders().length;
    await stop(first.sandbox);
    expect(total).toBe(10_076);
    const next = await start({ keep: { dir } });
    expect(next.sandbox.state.orders()).toHaveLength(10_000);
    expect((await listOrders(next.url, "?limit=100")).data.map((o) => o.id)).toEqual(newest);
    // Those stamps ran ahead of the clock (one millisecond per record): a new one still comes after them.
    const created = next.sandbox.actions.createOrder({});
    expect((await listOrders(next.url, "?limit=1")).data[0]!.id).toBe(created.id);
  });

  it("refuses a saved state it cannot read, naming the file", () => {
    const dir = tempDir();
    writeFileSync(join(dir, "sandbox-state.json"), '{"format":1,"orders":');
    expect(() => createSandbox({ keep: { dir } })).toThrow(SandboxStateFileError);
    expect(() => createSandbox({ keep: { dir } })).toThrow(`${join(dir, "sandbox-state.json")} is not valid JSON`);
    writeFileSync(join(dir, "sandbox-state.json"), JSON.stringify({ format: 1, restaurants: [] }));
    expect(() => createSandbox({ keep: { dir } })).toThrow(`sandbox state ${join(dir, "sandbox-state.json")}: restaurants: `);
  });

  it("refuses a saved record whose value the sandbox would never write, in one line naming the record and field", async () => {
    const dir = tempDir();
    const file = join(dir, "sandbox-state.json");
    const first = await start({ keep: { dir } });
    someChanges(first.sandbox);
    await stop(first.sandbox);
    const saved = readFileSync(file, "utf8");
    const edit = (change: (json: { orders: Record<string, unknown>[]; bookings: Record<string, unknown>[] }) => void) => {
      const json = JSON.parse(saved) as Parameters<typeof change>[0];
      change(json);
      writeFileSync(file, JSON.stringify(json));
      try {
        createSandbox({ keep: { dir } });
      } catch (err) {
        expect(err).toBeInstanceOf(SandboxStateFileError);
        return (err as Error).message;
      }
      throw new Error("the edited file was loaded");
    };
    let order = "";
    expect(edit((j) => ((order = j.orders[3]!.id as string), (j.orders[3]!.status = "BOGUS")))).toBe(
      `sandbox state ${file}: orders ${order}: status "BOGUS" is not an order status`,
    );
    expect(edit((j) => (j.orders[3]!.total = "NaN"))).toBe(`sandbox state ${file}: orders ${order}: total "NaN" is not an amount`);
    expect(edit((j) => ((j.orders[3]!.items as { price: unknown }[])[0]!.price = -1))).toBe(
      `sandbox state ${file}: orders ${order}: items.0.price -1 is not an amount`,
    );
    let booking = "";
    expect(edit((j) => ((booking = j.bookings[0]!.id as string), (j.bookings[0]!.createdAt = "yesterday")))).toBe(
      `sandbox state ${file}: bookings ${booking}: createdAt "yesterday" is not an ISO timestamp`,
    );
    expect(edit((j) => (j.orders[3]!.id = ""))).toBe(`sandbox state ${file}: orders #3: id "" is empty`);
    expect(edit((j) => delete j.orders[3]!.status)).toBe(`sandbox state ${file}: orders ${order}: status is missing`);
    // Ids the sandbox never gives: named by place, shown escaped, on one line.
    const notAnId = 'is not an id the sandbox gives (a prefix, "_", letters or digits)';
    expect(edit((j) => (j.orders[3]!.id = "ord_\u0000x"))).toBe(`sandbox state ${file}: orders #3: id "ord_\\u0000x" ${notAnId}`);
    expect(edit((j) => (j.bookings[0]!.id = ".."))).toBe(`sandbox state ${file}: bookings #0: id ".." ${notAnId}`);
    expect(edit((j) => (j.orders[3]!.restaurantId = "rest_1\n"))).toBe(
      `sandbox state ${file}: orders ${order}: restaurantId "rest_1\\n" ${notAnId}`,
    );
    // Two records of one id (the store keeps one per id, across kinds), a restaurant the file does not have.
    expect(edit((j) => (j.orders[4]!.id = order))).toBe(
      `sandbox state ${file}: orders ${order}: id "${order}" is also the id of orders #3`,
    );
    expect(edit((j) => (j.bookings[1]!.id = order))).toBe(
      `sandbox state ${file}: bookings ${order}: id "${order}" is also the id of orders #3`,
    );
    expect(edit((j) => (j.orders[3]!.restaurantId = "rest_99"))).toBe(
      `sandbox state ${file}: orders ${order}: restaurantId "rest_99" is no restaurant of the file`,
    );
    expect(edit((j) => (j.orders[3]!.currency = 5))).toBe(`sandbox state ${file}: orders ${order}: currency 5 is not a currency code`);
    // What an order's dates say of its status, as the sandbox's actions write them.
    const json = JSON.parse(saved) as { orders: { id: string; status: string; paidAt: string | null; createdAt: string }[] };
    const at = (status: string, paid: boolean) => json.orders.findIndex((o) => o.status === status && (o.paidAt !== null) === paid);
    const delivered = at("DELIVERED", true);
    const refunded = at("REFUNDED", true);
    const pendingPaid = at("PENDING", true);
    expect([delivered, refunded, pendingPaid].every((i) => i >= 0)).toBe(true);
    const idOf = (i: number) => json.orders[i]!.id;
    const stamp = "2026-01-02T03:04:05.000Z";
    expect(edit((j) => (j.orders[delivered]!.refundedAt = stamp))).toBe(
      `sandbox state ${file}: orders ${idOf(delivered)}: refundedAt "${stamp}" is set on an order that is DELIVERED, not REFUNDED`,
    );
    expect(edit((j) => (j.orders[refunded]!.refundedAt = null))).toBe(
      `sandbox state ${file}: orders ${idOf(refunded)}: refundedAt null is not set on a REFUNDED order`,
    );
    expect(edit((j) => (j.orders[refunded]!.paidAt = null))).toBe(
      `sandbox state ${file}: orders ${idOf(refunded)}: paidAt null is not set on a REFUNDED order (only a paid order is refunded)`,
    );
    expect(edit((j) => (j.orders[delivered]!.paidAt = "2000-01-01T00:00:00.000Z"))).toBe(
      `sandbox state ${file}: orders ${idOf(delivered)}: paidAt "2000-01-01T00:00:00.000Z" is before the order's createdAt (${json.orders[delivered]!.createdAt})`,
    );
    // A PENDING order paid at checkout is the sandbox's own writing (buildOrder): it loads.
    writeFileSync(file, saved);
    const loaded = createSandbox({ keep: { dir } });
    expect(loaded.state.orders().find((o) => o.id === idOf(pendingPaid))).toMatchObject({
      status: "PENDING",
      paidAt: expect.any(String) as unknown,
    });
    await loaded.close();
    expect(edit((j) => delete j.orders[3]!.status)).toBe(`sandbox state ${file}: orders ${order}: status is missing`);
    // The file is refused as it is, not changed; a fresh start seeds anew over it.
    const refused = readFileSync(file, "utf8");
    expect(() => createSandbox({ keep: { dir } })).toThrow(SandboxStateFileError);
    expect(readFileSync(file, "utf8")).toBe(refused);
    const fresh = await start({ keep: { dir, fresh: true } });
    await stop(fresh.sandbox);
    expect(readFileSync(file, "utf8")).not.toBe(refused);
    expect(() => opened.push(createSandbox({ keep: { dir } }))).not.toThrow();
  });
});
