import { mkdtempSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import pino from "pino";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { createPostgresMirror, type MirrorStore } from "../../src/mirror/mirror-store.js";
import type { RejectedRecord } from "../../src/mirror/set-aside-records.js";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { createApiClient, type ApiClient } from "../../src/upstream/client.js";
import { refreshKind } from "../../src/sync/refresh-kind.js";
import { createRefreshQueue, type RefreshJobData } from "../../src/sync/refresh-queue.js";
import { runCli } from "../helpers/cli-process.js";
import { importAll } from "../helpers/import-all.js";
import { openDatabaseOfEnv, openTestDatabase, randomSchema, testDrivers, type TestDatabase } from "../helpers/postgres.js";

// Issue 21 item 2: a record the mirror cannot hold is set aside with its reason; the rest of its
// page is written and the sweep goes on. The sandbox serves the bad records over real HTTP.

/** Makes the sandbox serve a record with these fields (its control route: no checks, no webhook). */
async function corrupt(url: string, kind: string, id: string, fields: Record<string, unknown>) {
  const res = await fetch(`${url}/_sandbox/records/${kind}/${encodeURIComponent(id)}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(fields),
  });
  expect(res.status).toBe(200);
}

/** One restaurant (12 orders, 5 bookings, 6 menu items); one order and two bookings the mirror must refuse. */
async function sandboxWithBadRecords() {
  const sandbox = createSandbox({ restaurants: 1 });
  const url = await sandbox.listen();
  const [badOrder] = sandbox.state.orders();
  const [nulBooking, feb30Booking] = sandbox.state.bookings();
  await corrupt(url, "orders", badOrder!.id, { paidAt: "yesterday evening" });
  await corrupt(url, "bookings", nulBooking!.id, { diner: { name: "Ada\u0000Lovelace", email: "ada@example.com" } });
  await corrupt(url, "bookings", feb30Booking!.id, { date: "2026-02-30" });
  return { sandbox, url, badOrder: badOrder!.id, nulBooking: nulBooking!.id, feb30Booking: feb30Booking!.id };
}

const ids = (records: { id: string }[]) => records.map((r) => r.id).sort();

describe.each(testDrivers())("records the mirror cannot hold (%s)", (driver) => {
  let database: TestDatabase;
  let mirror: MirrorStore;
  let reported: RejectedRecord[];
  let sandbox: Sandbox;
  let url: string;
  let api: ApiClient;
  let bad: Awaited<ReturnType<typeof sandboxWithBadRecords>>;
  beforeAll(async () => {
    database = await openTestDatabase(driver);
  });
  afterAll(() => database.close());
  beforeEach(async () => {
    await database.truncate();
    reported = [];
    mirror = createPostgresMirror(database.db, { onRejected: (r) => reported.push(...r) });
    bad = await sandboxWithBadRecords();
    ({ sandbox, url } = bad);
    api = createApiClient({ baseUrl: url, apiKey: sandbox.apiKey, retryBaseMs: 10 });
  });
  afterEach(() => sandbox.close());

  it("a sweep writes the other 11 orders, sets the refused ones aside with their reason, and goes on to bookings and menus", async () => {
    const totals = await importAll({ api, mirror, db: database.db });
    expect(totals).toEqual({ orders: 12, bookings: 5, "menu-items": 6 });
    const orders = sandbox.state.orders();
    expect(ids(await mirror.all("orders"))).toEqual(ids(orders.filter((o) => o.id !== bad.badOrder)));
    expect(ids(await mirror.all("bookings"))).toEqual(
      ids(sandbox.state.bookings().filter((b) => b.id !== bad.nulBooking && b.id !== bad.feb30Booking)),
    );
    expect(ids(await mirror.all("menu-items"))).toEqual(ids(sandbox.state.menuItems()));

    const rejections = await mirror.rejections();
    expect(rejections.map((r) => ({ kind: r.kind, id: r.id, reason: r.reason, count: r.count }))).toEqual(
      [
        { kind: "bookings", id: bad.nulBooking, reason: "nul_character", count: 1 },
        { kind: "bookings", id: bad.feb30Booking, reason: "invalid_date", count: 1 },
        { kind: "orders", id: bad.badOrder, reason: "invalid_timestamp", count: 1 },
      ].sort((a, b) => (a.kind + a.id < b.kind + b.id ? -1 : 1)),
    );
    const nul = rejections.find((r) => r.id === bad.nulBooking)!;
    expect(nul.detail).toContain("diner.name");
    expect(nul.restaurantId).toBe("rest_1");
    // The record as read, escaped: the NUL survives as text, and the record parses back whole.
    expect(JSON.parse(nul.raw)).toMatchObject({ id: bad.nulBooking, diner: { name: "Ada\u0000Lovelace" } });
    expect(rejections.find((r) => r.id === bad.badOrder)!.detail).toMatch(/paidAt must be an ISO-8601 timestamp/);
    // Reported once per record per read (the service turns this into a log line and a metric).
    expect(reported.map((r) => r.reason).sort()).toEqual(["invalid_date", "invalid_timestamp", "nul_character"]);

    // A later sweep counts them again rather than adding rows.
    await importAll({ api, mirror, db: database.db });
    expect((await mirror.rejections()).map((r) => r.count)).toEqual([2, 2, 2]);
  });

  it("a refresh whose pending id was refused settles that id and writes the rest of the page", async () => {
    const redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: null });
    const prefix = `test-rejected-${randomUUID().slice(0, 8)}`;
    const queue = new Queue<RefreshJobData>("sync", { connection: redis, prefix });
    try {
      const scheduler = createRefreshQueue({ redis, queue, prefix, debounceMs: 60_000 });
      await scheduler.request("orders", "rest_1", bad.badOrder);
      const outcome = await refreshKind({
        api,
        mirror,
        scheduler,
        logger: pino({ level: "silent" }),
        kind: "orders",
        maxPages: 10,
        giveUpMs: 600_000,
      });
      expect(outcome.missing).toEqual([]);
      expect(await scheduler.pending("orders")).toEqual([]);
      expect((await mirror.all("orders")).length).toBe(11);
      expect((await mirror.rejections("orders")).map((r) => r.id)).toEqual([bad.badOrder]);
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
      await redis.quit();
    }
  });

  it("a record out of the spec's shape (an unknown order status, a price that is no number) is set aside the same way, not the page", async () => {
    const [, second] = sandbox.state.orders();
    const [menuItem] = sandbox.state.menuItems();
    await corrupt(url, "orders", second!.id, { status: "ON_HOLD" });
    await corrupt(url, "menu-items", menuItem!.id, { price: "free" });
    const totals = await importAll({ api, mirror, db: database.db, kinds: ["orders", "menu-items"] });
    expect(totals).toEqual({ orders: 12, bookings: 0, "menu-items": 6 });
    expect((await mirror.all("orders")).length).toBe(10);
    expect(ids(await mirror.all("menu-items"))).toEqual(ids(sandbox.state.menuItems().filter((m) => m.id !== menuItem!.id)));
    const rejections = await mirror.rejections();
    expect(
      rejections
        .filter((r) => r.reason === "invalid_field")
        .map((r) => [r.kind, r.id, r.detail.includes(r.kind === "orders" ? "status" : "price")]),
    ).toEqual([
      ["menu-items", menuItem!.id, true],
      ["orders", second!.id, true],
    ]);
    expect(JSON.parse(rejections.find((r) => r.id === menuItem!.id)!.raw)).toMatchObject({ price: "free" });
  });

  it("a refused record that later reads clean is written and its rejection cleared", async () => {
    await importAll({ api, mirror, db: database.db, kinds: ["orders"] });
    expect(await mirror.get("orders", bad.badOrder)).toBeUndefined();
    await corrupt(url, "orders", bad.badOrder, { paidAt: null });
    await importAll({ api, mirror, db: database.db, kinds: ["orders"] });
    expect(await mirror.get("orders", bad.badOrder)).toMatchObject({ id: bad.badOrder, paidAt: null });
    expect(await mirror.rejections()).toEqual([]);
  });

  it("backfill writes the rest, names the refused records on stderr, counts them and exits 0", async () => {
    const env: Record<string, string> =
      driver === "server"
        ? { DATABASE_URL: inject("databaseUrl"), DATABASE_SCHEMA: randomSchema() }
        : { DATA_DIR: mkdtempSync(join(tmpdir(), "svc-rejected-")) };
    const proc = runCli(["backfill", "--json"], {
      ...env,
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: `test-rejected-${randomUUID().slice(0, 8)}`,
      API_BASE_URL: url,
      API_KEY: sandbox.apiKey,
      API_RATE: "1000",
    });
    expect((await proc.exited).code).toBe(0);
    expect(JSON.parse(proc.stdout())).toEqual({
      backfilled: { orders: 12, bookings: 5, "menu-items": 6 },
      rejected: { orders: 1, bookings: 2 },
      state: "complete",
    });
    expect(proc.stderr()).toContain(`refused (invalid_timestamp): orders record "${bad.badOrder}": field paidAt`);
    expect(proc.stderr()).not.toContain("\u0000");
    const db = await openDatabaseOfEnv(env);
    try {
      const stored = createPostgresMirror(db.db);
      expect((await stored.all("orders")).length).toBe(11);
      expect((await stored.rejections()).length).toBe(3);
    } finally {
      await db.close();
    }
    // A fresh embedded data directory runs initdb in the child process: slow on a busy machine.
  }, 120_000);
});
