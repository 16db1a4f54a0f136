import { sql } from "kysely";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createEventLog, type EventLog, listFailureGroups } from "../../src/mirror/event-log.js";
import { createPostgresMirror } from "../../src/mirror/mirror-store.js";
import { migrateToLatest } from "../../src/mirror/database.js";
import { findRecordKinds, readRecordStory, TIMELINE_LIMIT } from "../../src/mirror/record-story.js";
import { MIGRATIONS } from "../../src/mirror/migrations.js";
import { openTestDatabase, testDrivers, type TestDatabase } from "../helpers/postgres.js";

// Issue 34: the operator asks about an order, not an event id. The event log knows which record
// each event names (migration 0013), a record's story reads it by index, and failures group by
// their error's fingerprint.

const BEFORE_0013 = Object.keys(MIGRATIONS).indexOf("0013_event_records");

const order = (id: string, status: string) => ({
  id,
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

const changePayload = (id: string, recordId: string, before: unknown, after: unknown, changed: string[], source = "webhook") => ({
  id,
  type: "change.order",
  createdAt: "2026-11-24T05:00:00Z",
  data: { kind: "order", id: recordId, restaurantId: "rest_1", before, after, changed, source },
});

describe.each(testDrivers())("record stories (%s)", (driver) => {
  let database: TestDatabase;
  let log: EventLog;
  beforeAll(async () => {
    database = await openTestDatabase(driver);
    log = createEventLog(database.db);
  });
  afterAll(() => database.close());
  beforeEach(() => database.truncate());

  const at = (id: string, when: string) => database.db.updateTable("events").set({ received_at: when }).where("id", "=", id).execute();
  const recordOf = async (id: string) =>
    database.db.selectFrom("events").select(["record_kind", "record_id"]).where("id", "=", id).executeTakeFirstOrThrow();

  it("migration 0013 fills the record of events logged before it, and every insert after it", async () => {
    const old = await openTestDatabase(driver, { migrations: BEFORE_0013 });
    try {
      const insert = (id: string, type: string, payload: unknown) =>
        sql`insert into events (id, type, payload) values (${id}, ${type}, ${JSON.stringify(payload)}::jsonb)`.execute(old.db);
      await insert("evt_order", "order.refunded", { data: { id: "ord_1", restaurantId: "rest_1" } });
      await insert("evt_order_id", "order.status_changed", { data: { orderId: "ord_2" } });
      await insert("evt_booking", "booking.created", { data: { id: "bkg_1" } });
      await insert("evt_menu", "menu_item.updated", { data: { id: "mi_1" } });
      await insert("evt_review", "review.created", { data: { id: "rev_1" } });
      await insert("chg_1", "change.menu_item", { data: { kind: "menu_item", id: "mi_1" } });
      await insert("evt_unknown", "guest.visited", { data: { id: "g_1" } });
      await insert("evt_long", "order.created", { data: { id: "o".repeat(201) } });
      await insert("evt_thin", "order.created", { data: "not an object" });
      // "menuXitem" must not pass for menu_item (LIKE's _ is escaped).
      await insert("evt_like", "menuXitem.updated", { data: { id: "mi_2" } });
      await migrateToLatest(old);
      const rows = await old.db.selectFrom("events").select(["id", "record_kind", "record_id"]).orderBy("id").execute();
      expect(Object.fromEntries(rows.map((r) => [r.id, [r.record_kind, r.record_id]]))).toEqual({
        chg_1: ["menu-items", "mi_1"],
        evt_booking: ["bookings", "bkg_1"],
        evt_like: [null, null],
        evt_long: ["orders", null],
        evt_menu: ["menu-items", "mi_1"],
        evt_order: ["orders", "ord_1"],
        evt_order_id: ["orders", "ord_2"],
        evt_review: ["reviews", "rev_1"],
        evt_thin: ["orders", null],
        evt_unknown: [null, null],
      });
    } finally {
      await old.close();
    }
    await log.recordAttempt({
      id: "evt_new",
      type: "booking.status_changed",
      payload: { data: { id: "bkg_9" } },
      status: "handled",
      handlers: {},
    });
    expect(await recordOf("evt_new")).toEqual({ record_kind: "bookings", record_id: "bkg_9" });
  });

  it("tells a record's story: the mirror's copy, its last change's source, and every event naming it newest first with field diffs", async () => {
    const mirror = createPostgresMirror(database.db);
    await mirror.upsert("orders", [order("ord_1", "DELIVERED")], new Date("2026-11-24T05:10:00Z"));
    await log.recordAttempt({
      id: "evt_created",
      type: "order.created",
      payload: { data: { id: "ord_1", restaurantId: "rest_1" } },
      status: "handled",
      handlers: { sync: { status: "ok" } },
    });
    await log.recordAttempt({
      id: "chg_1",
      type: "change.order",
      payload: changePayload(
        "chg_1",
        "ord_1",
        null,
        { ...order("ord_1", "PENDING"), bookingId: null },
        ["bookingId", "id", "status"],
        "webhook",
      ),
      status: "handled",
      handlers: {},
    });
    await log.recordAttempt({
      id: "evt_refunded",
      type: "order.refunded",
      payload: { data: { id: "ord_1", restaurantId: "rest_1" } },
      status: "failed",
      handlers: { "user:order.refunded:0": { status: "failed", error: "printer offline", stack: "Error: printer offline\n at x" } },
    });
    await log.recordAttempt({
      id: "chg_2",
      type: "change.order",
      payload: changePayload("chg_2", "ord_1", order("ord_1", "PENDING"), order("ord_1", "DELIVERED"), ["status"], "reconcile"),
      status: "handled",
      handlers: {},
    });
    await log.recordAttempt({
      id: "evt_other",
      type: "order.created",
      payload: { data: { id: "ord_2" } },
      status: "handled",
      handlers: {},
    });
    await at("evt_created", "2026-11-24T05:00:00Z");
    await at("chg_1", "2026-11-24T05:00:01Z");
    await at("evt_refunded", "2026-11-24T05:05:00Z");
    await at("chg_2", "2026-11-24T05:10:01Z");

    const story = (await readRecordStory(database.db, "orders", "ord_1", { timeoutMs: 5000 }))!;
    expect(story.record).toMatchObject({ data: { status: "DELIVERED" }, readAt: new Date("2026-11-24T05:10:00Z") });
    expect(story.record?.lastChange).toEqual({ eventId: "chg_2", at: new Date("2026-11-24T05:10:01Z"), source: "reconcile" });
    expect(story.restaurantId).toBe("rest_1");
    expect(story.timeline.map((e) => [e.entry, e.eventId])).toEqual([
      ["change", "chg_2"],
      ["delivery", "evt_refunded"],
      ["change", "chg_1"],
      ["delivery", "evt_created"],
    ]);
    expect(story.timeline[0]).toMatchObject({
      source: "reconcile",
      created: false,
      diff: [{ field: "status", before: "PENDING", after: "DELIVERED" }],
    });
    // The first change created the record: its fields with a value, not `bookingId: null → null`.
    expect(story.timeline[2]!.created).toBe(true);
    expect(story.timeline[2]!.diff).toEqual([
      { field: "id", before: null, after: "ord_1" },
      { field: "status", before: null, after: "PENDING" },
    ]);
    // The outcome as a list shows it: no stack (the event's page has it).
    expect(story.timeline[1]!.handlers).toEqual({ "user:order.refunded:0": { status: "failed", attempts: 1, error: "printer offline" } });
    expect(story.nextCursor).toBeNull();

    // A record only events named: no copy, the restaurant from the newest event.
    const named = (await readRecordStory(database.db, "orders", "ord_2", { timeoutMs: 5000 }))!;
    expect(named.record).toBeNull();
    expect(named.timeline.map((e) => e.eventId)).toEqual(["evt_other"]);
    expect(await readRecordStory(database.db, "orders", "ord_nowhere", { timeoutMs: 5000 })).toBeUndefined();
    expect(await readRecordStory(database.db, "bookings", "ord_1", { timeoutMs: 5000 })).toBeUndefined();

    expect(await findRecordKinds(database.db, "ord_1", 5000)).toEqual(["orders"]);
    expect(await findRecordKinds(database.db, "ord_2", 5000)).toEqual(["orders"]);
    expect(await findRecordKinds(database.db, "nothing", 5000)).toEqual([]);
  });

  it("pages a long timeline by TIMELINE_LIMIT, newest first, each event once", async () => {
    const total = TIMELINE_LIMIT + 5;
    await sql`insert into events (id, type, status, payload, received_at)
      select 'evt_' || lpad(g::text, 4, '0'), 'order.status_changed', 'handled', '{"data":{"id":"ord_busy"}}'::jsonb,
             timestamptz '2026-11-01' + (g / 2) * interval '1 ms'
      from generate_series(1, ${total}) g`.execute(database.db);
    const first = (await readRecordStory(database.db, "orders", "ord_busy", { timeoutMs: 5000 }))!;
    expect(first.timeline).toHaveLength(TIMELINE_LIMIT);
    expect(first.nextCursor).not.toBeNull();
    const second = (await readRecordStory(database.db, "orders", "ord_busy", { cursor: first.nextCursor!, timeoutMs: 5000 }))!;
    expect(second.nextCursor).toBeNull();
    const ids = [...first.timeline, ...second.timeline].map((e) => e.eventId);
    const expected = Array.from({ length: total }, (_, i) => `evt_${String(total - i).padStart(4, "0")}`);
    expect(ids).toEqual(expected);
  });

  it("stops a page before 1 MiB of change payloads (a change of a big order holds it twice), and goes on by nextCursor", async () => {
    const big = (note: string) => ({ ...order("ord_big", "PENDING"), note: note.repeat(350 * 1024) });
    for (const [n, id] of ["chg_a", "chg_b", "chg_c"].entries()) {
      await log.recordAttempt({
        id,
        type: "change.order",
        payload: changePayload(id, "ord_big", big(String(n)), big(String(n + 1)), ["note"]),
        status: "handled",
        handlers: {},
      });
      await at(id, `2026-11-24T05:0${n}:00Z`);
    }
    const pages: string[][] = [];
    let cursor: string | undefined;
    for (let n = 0; n < 5; n++) {
      const story = (await readRecordStory(database.db, "orders", "ord_big", { ...(cursor ? { cursor } : {}), timeoutMs: 5000 }))!;
      pages.push(story.timeline.map((e) => e.eventId));
      expect(story.timeline[0]?.diff?.[0]).toMatchObject({ field: "note" });
      if (!story.nextCursor) break;
      cursor = story.nextCursor;
    }
    expect(pages).toEqual([["chg_c"], ["chg_b"], ["chg_a"]]);
  });

  it("groups ten failures of one bug that differ only by ids into one group, and a replay filter selects exactly them", async () => {
    for (let i = 0; i < 10; i++) {
      const orderId = `ord_${(i * 7919).toString(36).padStart(8, "x")}${i}`;
      await log.recordAttempt({
        id: `evt_bug_${i}`,
        type: "order.created",
        payload: { data: { id: orderId } },
        status: "failed",
        handlers: {
          print: { status: "failed", error: `order ${orderId} not found after ${i + 1} tries at 2026-11-24T05:0${i}:00Z\nstack` },
        },
      });
    }
    await log.recordAttempt({
      id: "evt_other_bug",
      type: "order.created",
      payload: {},
      status: "failed",
      handlers: { print: { status: "failed", error: "paper jam in tray 2" } },
    });
    const groups = await listFailureGroups(database.db, { since: new Date(0) }, 5000);
    expect(groups.map((g) => [g.fingerprint, g.events, g.fingerprinted])).toEqual([
      ["order ord_<id> not found after <n> tries at <time>", 10, true],
      ["paper jam in tray <n>", 1, true],
    ]);
    expect(groups[0]!.error).toMatch(/^order ord_\w+ not found after 10 tries/);
    const page = await log.query({ handler: "print", fingerprint: groups[0]!.fingerprint, limit: 100 });
    expect(page.data.map((e) => e.id).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `evt_bug_${i}`));
  });
});
