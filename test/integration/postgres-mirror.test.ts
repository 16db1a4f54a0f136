import { sql } from "kysely";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createPostgresMirror, databaseClock, ordersNewerStatement, type MirrorStore } from "../../src/mirror/mirror-store.js";
import { MirrorRecordError } from "../../src/mirror/errors.js";
import { bookingRecord, later, menuItemRecord, orderRecord, reviewRecord } from "../helpers/mirror-records.js";
import { openTestDatabase, testDrivers, type TestDatabase } from "../helpers/postgres.js";

describe.each(testDrivers())("PostgreSQL mirror: writes (%s)", (driver) => {
  let database: TestDatabase;
  let mirror: MirrorStore;
  let t0: Date;
  beforeAll(async () => {
    database = await openTestDatabase(driver);
    mirror = createPostgresMirror(database.db);
  });
  afterAll(() => database.close());
  beforeEach(async () => {
    await database.truncate();
    t0 = await mirror.clock();
  });

  it("reads the shared clock as a lower bound of the database's, and never backwards", async () => {
    let last = 0;
    for (let i = 0; i < 50; i++) {
      const ours = (await mirror.clock()).getTime();
      expect(ours).toBeLessThanOrEqual((await databaseClock(database.db)).getTime());
      expect(ours).toBeGreaterThanOrEqual(last);
      last = ours;
    }
  });

  it("counts the orders newer than each of many points in one statement, by restaurant and status, each up to its max", async () => {
    const at = (minute: number) => new Date(Date.UTC(2026, 10, 20, 12, minute)).toISOString();
    await mirror.upsert(
      "orders",
      [
        orderRecord("ord_a", { createdAt: at(1) }),
        orderRecord("ord_b", { createdAt: at(2), restaurantId: "rest_2" }),
        orderRecord("ord_c", { createdAt: at(3), status: "READY" }),
        orderRecord("ord_d", { createdAt: at(4) }),
      ],
      t0,
    );
    const since = new Date(at(1));
    expect(
      await mirror.countOrdersNewer([
        { since, max: 100 },
        { since, restaurantId: "rest_1", max: 100 },
        { since, status: "READY", max: 100 },
        { since, max: 2 },
        { since: new Date(at(4)), max: 100 },
      ]),
    ).toEqual([3, 2, 1, 2, 0]);
    expect(await mirror.countOrdersNewer([])).toEqual([]);
  });

  it("counts by walking the created_at index, never by scanning the company's orders, at a company's size", async () => {
    await mirror.upsert("orders", [orderRecord("ord_seed", { createdAt: new Date(Date.UTC(2026, 9, 1)).toISOString() })], t0);
    // 20,000 more, a minute apart, copied in one statement from the one written.
    await sql`insert into orders
      select (jsonb_populate_record(null::orders, to_jsonb(o) || jsonb_build_object('id', 'ord_' || g, 'created_at', o.created_at + make_interval(mins => g)))).*
      from orders o, generate_series(1, 20000) g`.execute(database.db);
    await sql`analyze orders`.execute(database.db);
    const since = new Date(Date.UTC(2026, 9, 10));
    const statement = ordersNewerStatement("default", [
      { since, max: 80 },
      { since, status: "CONFIRMED", max: 2000 },
      { since, restaurantId: "rest_1", max: 2000 },
    ]);
    const plan = JSON.stringify((await sql`EXPLAIN (FORMAT JSON) ${statement}`.execute(database.db)).rows);
    expect(plan).toContain("orders_created_at_idx");
    expect(plan).not.toContain("Seq Scan");
    expect((await statement.execute(database.db)).rows.map((r) => Number(r.n))).toEqual([80, 0, 2000]);
  });

  it("stores every kind and reads back the record as given, unknown fields kept in raw", async () => {
    const order = orderRecord("ord_1", { futureField: { nested: [1, "two"] }, loyaltyTier: "gold" });
    expect(await mirror.upsert("orders", [order], t0)).toMatchObject({ written: 1, skipped: 0 });
    await mirror.upsert("bookings", [bookingRecord("bk_1")], t0);
    await mirror.upsert("menu-items", [menuItemRecord("mi_1", { stock: 3 })], t0);
    await mirror.upsert("reviews", [reviewRecord("rev_1", { unknownScore: 0.5 })], t0);
    expect(await mirror.get("orders", "ord_1")).toEqual(order);
    expect(await mirror.get("reviews", "rev_1")).toEqual(reviewRecord("rev_1", { unknownScore: 0.5 }));
    expect(await mirror.get("orders", "nope")).toBeUndefined();
    const booking = await database.db
      .selectFrom("bookings")
      .select(["diner_email", "party_size", sql<string>`date::text`.as("date"), sql<string>`time::text`.as("time")])
      .executeTakeFirstOrThrow();
    expect(booking).toEqual({ diner_email: "ada@example.com", party_size: 4, date: "2026-11-21", time: "19:30:00" });
    const menu = await database.db.selectFrom("menu_items").select(["allergens", "tags", "stock", "price"]).executeTakeFirstOrThrow();
    expect(menu).toEqual({ allergens: ["celery"], tags: ["vegan"], stock: 3, price: "8.5" });
    expect((await mirror.all("orders")).map((o) => o.id)).toEqual(["ord_1"]);
    expect(await mirror.lastWriteAt("orders")).toBeGreaterThanOrEqual(t0.getTime());
    expect(await mirror.lastWriteAt("reviews")).toBeTypeOf("number");
  });

  it("keeps money exact: decimal strings stay as given and sums are decimal, not float", async () => {
    await mirror.upsert(
      "orders",
      [orderRecord("ord_a", { total: 0.1 }), orderRecord("ord_b", { total: 0.2 }), orderRecord("ord_c", { total: "12.30", tip: "0.07" })],
      t0,
    );
    const { rows } = await sql<{ sum: string }>`select sum(total)::text as sum from orders where id in ('ord_a', 'ord_b')`.execute(
      database.db,
    );
    expect(rows[0]!.sum).toBe("0.3");
    const c = await database.db.selectFrom("orders").select(["total", "tip"]).where("id", "=", "ord_c").executeTakeFirstOrThrow();
    expect(c).toEqual({ total: "12.30", tip: "0.07" });
    const items = await database.db
      .selectFrom("order_items")
      .select(sql<string>`sum(price * quantity)::text`.as("value"))
      .where("order_id", "=", "ord_a")
      .executeTakeFirstOrThrow();
    expect(items.value).toBe("20.5");
  });

  it("webhook with older read does not override newer data", async () => {
    await mirror.upsert("orders", [orderRecord("ord_1", { tip: 2 })], later(t0, 2000));
    const result = await mirror.upsert("orders", [orderRecord("ord_1", { tip: 1 })], later(t0, 1000));
    expect(result).toEqual({ written: 0, skipped: 1, changes: [], rejected: [] });
    expect(await mirror.get("orders", "ord_1")).toMatchObject({ tip: 2 });
  });

  it("never moves an order back on its state machine, even from a later read; a further-along earlier read wins", async () => {
    await mirror.upsert("orders", [orderRecord("ord_1", { status: "DELIVERED" })], later(t0, 1000));
    expect((await mirror.upsert("orders", [orderRecord("ord_1", { status: "PREPARING" })], later(t0, 2000))).skipped).toBe(1);
    expect(await mirror.get("orders", "ord_1")).toMatchObject({ status: "DELIVERED" });
    expect((await mirror.upsert("orders", [orderRecord("ord_1", { status: "REFUNDED" })], later(t0, 500))).written).toBe(1);
    expect(await mirror.get("orders", "ord_1")).toMatchObject({ status: "REFUNDED" });
  });

  it("on an exact tie (same rank, same read instant) keeps the stored copy", async () => {
    await mirror.upsert("menu-items", [menuItemRecord("mi_1", { price: 1 })], t0);
    expect(await mirror.upsert("menu-items", [menuItemRecord("mi_1", { price: 2 })], t0)).toEqual({
      written: 0,
      skipped: 1,
      changes: [],
      rejected: [],
    });
    expect(await mirror.get("menu-items", "mi_1")).toMatchObject({ price: 1 });
    // Within one batch (one read instant) the first copy of an id is the stored one.
    await mirror.upsert("menu-items", [menuItemRecord("mi_2", { price: 3 }), menuItemRecord("mi_2", { price: 4 })], t0);
    expect(await mirror.get("menu-items", "mi_2")).toMatchObject({ price: 3 });
  });

  it("20 concurrent writers of one record: the latest read wins, and exactly one saw it first", async () => {
    const reads = Array.from({ length: 20 }, (_, i) => i).sort(() => Math.random() - 0.5);
    const results = await Promise.all(
      reads.map((i) => mirror.upsert("orders", [orderRecord("ord_race", { tip: i, status: "CONFIRMED" })], later(t0, i + 1))),
    );
    expect(await mirror.get("orders", "ord_race")).toMatchObject({ tip: 19 });
    const changes = results.flatMap((r) => r.changes);
    expect(changes.filter((c) => c.before === null)).toHaveLength(1);
    // Each change's pre-image is the copy it replaced: the chain of changes links up.
    for (const change of changes.filter((c) => c.before !== null))
      expect(changes.some((other) => other.after.tip === change.before!.tip)).toBe(true);
    const { rows } = await sql<{ read_at: Date }>`select read_at from orders where id = 'ord_race'`.execute(database.db);
    expect(rows[0]!.read_at.getTime()).toBe(later(t0, 20).getTime());
  });

  it("replaces an order's line items with the order, and leaves them when the write is refused", async () => {
    await mirror.upsert("orders", [orderRecord("ord_1")], later(t0, 1));
    const items = [{ id: "ord_1_i9", menuItemId: "mi_9", name: "Cake", quantity: 3, price: "4.10", notes: null }];
    await mirror.upsert("orders", [orderRecord("ord_1", { items })], later(t0, 3));
    await mirror.upsert("orders", [orderRecord("ord_1")], later(t0, 2));
    const stored = await database.db
      .selectFrom("order_items")
      .select(["order_id", "id", "menu_item_id", "quantity", "price", "position"])
      .execute();
    expect(stored).toEqual([{ order_id: "ord_1", id: "ord_1_i9", menu_item_id: "mi_9", quantity: 3, price: "4.10", position: 0 }]);
  });

  it("reports before, after and the changed fields; a rewrite of the same content is no change but confirms the read", async () => {
    const first = await mirror.upsert("orders", [orderRecord("ord_1")], later(t0, 1));
    expect(first.changes).toEqual([
      { kind: "orders", id: "ord_1", before: null, after: orderRecord("ord_1"), changed: Object.keys(orderRecord("ord_1")).sort() },
    ]);
    const second = await mirror.upsert("orders", [orderRecord("ord_1", { status: "CONFIRMED", tip: 1.5 })], later(t0, 2));
    expect(second.changes).toEqual([
      {
        kind: "orders",
        id: "ord_1",
        before: orderRecord("ord_1"),
        after: orderRecord("ord_1", { status: "CONFIRMED", tip: 1.5 }),
        changed: ["status", "tip"],
      },
    ]);
    const same = await mirror.upsert("orders", [orderRecord("ord_1", { status: "CONFIRMED", tip: 1.5 })], later(t0, 4));
    expect(same).toEqual({ written: 1, skipped: 0, changes: [], rejected: [] });
    // The confirmed read moved read_at on, so a read taken before it and delivered late is refused.
    const late = await mirror.upsert("orders", [orderRecord("ord_1", { status: "CONFIRMED", tip: 9 })], later(t0, 3));
    expect(late).toEqual({ written: 0, skipped: 1, changes: [], rejected: [] });
  });

  it("lists a new record's fields in the order the diff of a changed one does (code points, not UTF-16 units)", async () => {
    // U+FF21 is one UTF-16 unit above the surrogates that start U+1F600, and a code point below it.
    const extra = { "\u{1F600}": 1, "\uFF21": 1 };
    const created = await mirror.upsert("orders", [{ ...orderRecord("ord_new"), ...extra }], later(t0, 1));
    const fields = created.changes[0]?.changed ?? [];
    expect(fields.filter((f) => f in extra)).toEqual(["\uFF21", "\u{1F600}"]);
    await mirror.upsert("orders", [orderRecord("ord_old")], later(t0, 1));
    const changed = await mirror.upsert("orders", [{ ...orderRecord("ord_old"), ...extra }], later(t0, 2));
    expect(changed.changes[0]?.changed).toEqual(["\uFF21", "\u{1F600}"]);
    expect(fields).toEqual([...Object.keys(orderRecord("ord_new")).sort(), "\uFF21", "\u{1F600}"]);
  });

  it("runs onChanges inside the write's transaction: its rows commit with the write, its failure undoes it", async () => {
    await mirror.upsert("reviews", [reviewRecord("rev_1")], later(t0, 1), {
      onChanges: async (tx, changes) => {
        await tx
          .insertInto("events")
          .values({
            account_id: mirror.account,
            id: `outbox_${changes[0]!.id}`,
            type: "review.changed",
            payload: JSON.stringify(changes),
            received_at: t0,
            status: "received",
            attempts: 1,
            handlers: "{}",
            updated_at: t0,
          })
          .execute();
      },
    });
    expect(await database.db.selectFrom("events").select("id").execute()).toEqual([{ id: "outbox_rev_1" }]);
    const failing = mirror.upsert("reviews", [reviewRecord("rev_1", { rating: 1 })], later(t0, 2), {
      onChanges: async () => Promise.reject(new Error("outbox down")),
    });
    await expect(failing).rejects.toThrow("outbox down");
    expect(await mirror.get("reviews", "rev_1")).toMatchObject({ rating: 5 });
    let called = false;
    await mirror.upsert("reviews", [reviewRecord("rev_1")], later(t0, 3), {
      onChanges: () => {
        called = true;
        return Promise.resolve();
      },
    });
    expect(called).toBe(false);
  });

  it("sets a malformed record aside, naming the field, and writes the rest of the batch", async () => {
    const result = await mirror.upsert("orders", [orderRecord("ord_ok"), orderRecord("ord_bad", { total: "12,30" })], t0);
    expect(result).toMatchObject({ written: 1, skipped: 0 });
    expect(result.rejected).toEqual([
      {
        kind: "orders",
        id: "ord_bad",
        field: "total",
        reason: "invalid_field",
        message: expect.stringMatching(/field total must be/) as unknown,
      },
    ]);
    expect((await mirror.all("orders")).map((o) => o.id)).toEqual(["ord_ok"]);
    expect((await mirror.upsert("bookings", [bookingRecord("bk_1", { diner: { name: "x" } })], t0)).rejected[0]?.message).toMatch(
      /diner\.email/,
    );
    const items = [{ id: "a", menuItemId: "m", name: "n", quantity: 1.5, price: 1, notes: null }];
    expect((await mirror.upsert("orders", [orderRecord("o", { items })], t0)).rejected[0]?.field).toBe("items[0].quantity");
    await expect(mirror.upsert("orders", [orderRecord("o")], new Date(Number.NaN))).rejects.toBeInstanceOf(MirrorRecordError);
  });

  it("sets aside every value PostgreSQL would refuse, one record at a time, and writes the others in the same batch", async () => {
    const longId = "o".repeat(3000);
    const cases: [record: ReturnType<typeof orderRecord>, reason: string, field: string][] = [
      [orderRecord("nul_unknown", { note: { deep: ["ok", "a\u0000b"] } }), "nul_character", "note.deep[1]"],
      [orderRecord("nul_key", { ["k\u0000"]: 1 }), "nul_character", "(a key)"],
      [orderRecord("surrogate", { currency: "EU\ud800" }), "lone_surrogate", "currency"],
      [orderRecord("feb30", { createdAt: "2026-02-30T10:00:00Z" }), "invalid_timestamp", "createdAt"],
      [orderRecord("year0", { paidAt: "0000-01-01T00:00:00Z" }), "invalid_timestamp", "paidAt"],
      [orderRecord("hour25", { paidAt: "2026-01-01T25:00:00Z" }), "invalid_timestamp", "paidAt"],
      [
        orderRecord("big_qty", { items: [{ id: "a", menuItemId: "m", name: "n", quantity: 2 ** 31, price: 1, notes: null }] }),
        "out_of_range",
        "items[0].quantity",
      ],
      [orderRecord("long_decimal", { total: "1".repeat(5000) }), "out_of_range", "total"],
      [orderRecord(longId), "too_long", "id"],
      [orderRecord("long_status", { status: "S".repeat(5000) }), "too_long", "status"],
    ];
    const result = await mirror.upsert("orders", [orderRecord("clean_1"), ...cases.map(([r]) => r), orderRecord("clean_2")], t0);
    expect(result.written).toBe(2);
    expect(result.rejected.map((r) => [r.id === longId ? "(long)" : r.id, r.reason, r.field])).toEqual(
      cases.map(([r, reason, field]) => [r.id === longId ? "(long)" : r.id, reason, field]),
    );
    expect((await mirror.all("orders")).map((o) => o.id)).toEqual(["clean_1", "clean_2"]);
    const rows = await mirror.rejections("orders");
    expect(rows).toHaveLength(cases.length);
    // An id too long to be a key is kept shortened, with a hash of the whole.
    expect(rows.find((r) => r.id.startsWith("ooo"))?.id).toMatch(/^o{200}…sha256:[0-9a-f]{64}$/);

    const bookings = await mirror.upsert(
      "bookings",
      [
        bookingRecord("b_date", { date: "2026-02-30" }),
        bookingRecord("b_time", { time: "24:30" }),
        bookingRecord("b_party", { partySize: 1e12 }),
        bookingRecord("b_ok"),
      ],
      t0,
    );
    expect(bookings.rejected.map((r) => [r.id, r.reason])).toEqual([
      ["b_date", "invalid_date"],
      ["b_time", "invalid_time"],
      ["b_party", "out_of_range"],
    ]);
    expect(bookings.written).toBe(1);
  });
});
