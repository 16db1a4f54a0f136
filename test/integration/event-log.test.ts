import { sql } from "kysely";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createEventLog, type EventLog, type EventQuery } from "../../src/mirror/event-log.js";
import { EventLogError } from "../../src/mirror/event-log-error.js";
import { openTestDatabase, testDrivers, type TestDatabase } from "../helpers/postgres.js";

describe.each(testDrivers())("event log (%s)", (driver) => {
  let database: TestDatabase;
  let log: EventLog;
  // Receipt times as fixtures: the log stamps receipts with the database's clock, which a test
  // cannot step, so the time-filter tests set them afterwards.
  const receivedAt = (id: string, at: string) => database.db.updateTable("events").set({ received_at: at }).where("id", "=", id).execute();
  const ids = async (query: EventQuery) => (await log.query(query)).data.map((e) => e.id);
  beforeAll(async () => {
    database = await openTestDatabase(driver);
    log = createEventLog(database.db);
  });
  afterAll(() => database.close());
  beforeEach(() => database.truncate());

  it("records an event as delivered; a re-delivery counts an attempt and keeps the first payload", async () => {
    const first = await log.received({ id: "evt_1", type: "order.created", payload: { id: "evt_1", data: { total: 12.3 } } });
    expect(first).toMatchObject({ id: "evt_1", type: "order.created", status: "received", attempts: 1, handlers: {}, payload: { id: "evt_1", data: { total: 12.3 } } });
    await log.handlerOutcome("evt_1", "sync", { status: "failed", error: "upstream 503" });
    await log.finish("evt_1", "failed");
    const again = await log.received({ id: "evt_1", type: "order.created", payload: { changed: true } });
    expect(again).toMatchObject({ status: "received", attempts: 2, payload: { id: "evt_1", data: { total: 12.3 } }, receivedAt: first.receivedAt });
    await log.handlerOutcome("evt_1", "sync", { status: "ok" });
    await log.handlerOutcome("evt_1", "audit", { status: "ok" });
    await log.finish("evt_1", "handled");
    expect(await log.get("evt_1")).toMatchObject({ status: "handled", attempts: 2, handlers: { sync: { status: "ok", attempts: 2 }, audit: { status: "ok", attempts: 1 } } });
    expect(await log.get("evt_missing")).toBeUndefined();
  });

  it("refuses outcomes for unknown events and malformed input, changing nothing", async () => {
    await expect(log.handlerOutcome("evt_nope", "sync", { status: "ok" })).rejects.toMatchObject({ code: "not_found" });
    await expect(log.finish("evt_nope", "handled")).rejects.toMatchObject({ code: "not_found" });
    await expect(log.received({ id: "", type: "order.created", payload: {} })).rejects.toBeInstanceOf(EventLogError);
    await expect(log.received({ id: "evt_x", type: "t", payload: { n: 1n } })).rejects.toMatchObject({ field: "payload" });
    await log.received({ id: "evt_2", type: "order.created", payload: {} });
    await expect(log.finish("evt_2", "received" as "handled")).rejects.toMatchObject({ field: "status" });
    expect(await log.get("evt_2")).toMatchObject({ status: "received" });
    expect(await sql<{ n: number }>`select count(*)::int as n from events`.execute(database.db).then((r) => r.rows[0]!.n)).toBe(1);
  });

  it("queries by time, type pattern, status and handler, oldest first, page by page", async () => {
    await log.received({ id: "e1", type: "order.created", payload: {} });
    await log.received({ id: "e2", type: "order.status_changed", payload: {} });
    await log.received({ id: "e3", type: "orders_x.created", payload: {} });
    await log.received({ id: "e4", type: "booking.created", payload: {} });
    await log.received({ id: "e5", type: "order.refunded", payload: {} });
    for (const [id, at] of [["e1", "2026-11-20T10:00:00Z"], ["e2", "2026-11-20T10:00:00.999Z"], ["e3", "2026-11-20T10:00:01Z"], ["e4", "2026-11-20T10:00:01Z"], ["e5", "2026-11-21T00:00:00Z"]] as const) await receivedAt(id, at);
    const middle = new Date("2026-11-20T10:00:01Z");
    await log.handlerOutcome("e2", "sync", { status: "failed", error: "boom" });
    await log.finish("e2", "failed");
    await log.handlerOutcome("e5", "sync", { status: "ok" });
    await log.handlerOutcome("e5", "mail", { status: "failed", error: "smtp" });
    await log.finish("e5", "failed");

    expect(await ids({ type: "order.*" })).toEqual(["e1", "e2", "e5"]);
    expect(await ids({ type: "order.created" })).toEqual(["e1"]);
    expect(await ids({ type: "*" })).toHaveLength(5);
    expect(await ids({ status: "failed" })).toEqual(["e2", "e5"]);
    expect(await ids({ handler: "sync" })).toEqual(["e2", "e5"]);
    expect(await ids({ status: "failed", handler: "sync", handlerStatus: "failed" })).toEqual(["e2"]);
    expect(await ids({ since: middle })).toEqual(["e3", "e4", "e5"]);
    expect(await ids({ until: middle })).toEqual(["e1", "e2"]);

    const seen: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 10; i++) {
      // e3 and e4 share an instant: the cursor must order them by id, not skip one.
      const page = await log.query({ limit: 3, ...(cursor ? { cursor } : {}) });
      seen.push(...page.data.map((e) => e.id));
      if (!page.nextCursor) break;
      cursor = page.nextCursor;
    }
    expect(seen).toEqual(["e1", "e2", "e3", "e4", "e5"]);
  });

  it("refuses a query it cannot apply, naming the field", async () => {
    const bad: Array<[EventQuery, string]> = [
      [{ type: "order.%" }, "type"],
      [{ type: "ORDER.*" }, "type"],
      [{ status: "done" as "handled" }, "status"],
      [{ handlerStatus: "ok" }, "handlerStatus"],
      [{ limit: 0 }, "limit"],
      [{ since: new Date("nope") }, "since"],
      [{ cursor: "garbage!" }, "cursor"],
    ];
    for (const [query, field] of bad) await expect(log.query(query), JSON.stringify(query)).rejects.toMatchObject({ code: "invalid_filter", field });
  });

  it("prunes events received before a time, in batches, and keeps the rest", async () => {
    for (let i = 0; i < 7; i++) await log.received({ id: `old_${i}`, type: "order.created", payload: { i } });
    await log.received({ id: "new_1", type: "order.created", payload: {} });
    await database.db.updateTable("events").set({ received_at: "2026-10-01T00:00:00Z" }).where("id", "like", "old_%").execute();
    const cutoff = new Date((await log.get("new_1"))!.receivedAt.getTime() - 24 * 3600_000);
    expect(await log.prune(cutoff, 3)).toBe(7);
    expect(await ids({})).toEqual(["new_1"]);
    expect(await log.prune(cutoff, 3)).toBe(0);
    await expect(log.prune(cutoff, 0)).rejects.toMatchObject({ field: "batchSize" });
  });
});
