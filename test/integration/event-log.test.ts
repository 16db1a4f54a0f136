import { sql } from "kysely";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createEventLog, type EventAttempt, type EventLog, type EventQuery } from "../../src/mirror/event-log.js";
import { EventLogError } from "../../src/mirror/errors.js";
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

  const attempt = (
    id: string,
    status: EventAttempt["status"],
    handlers: EventAttempt["handlers"] = {},
    type = "order.created",
    payload: unknown = {},
  ): EventAttempt => ({ id, type, payload, status, handlers });

  it("records each attempt once: the first inserts, a later one counts an attempt, merges outcomes and keeps the first payload", async () => {
    await log.recordAttempt(
      attempt("evt_1", "received", { sync: { status: "failed", error: "upstream 503" } }, "order.created", {
        id: "evt_1",
        data: { total: 12.3 },
      }),
    );
    const first = (await log.get("evt_1"))!;
    expect(first).toMatchObject({
      id: "evt_1",
      type: "order.created",
      status: "received",
      attempts: 1,
      handlers: { sync: { status: "failed", error: "upstream 503", attempts: 1 } },
      payload: { id: "evt_1", data: { total: 12.3 } },
    });
    await log.recordAttempt(
      attempt("evt_1", "handled", { sync: { status: "ok" }, audit: { status: "ok" } }, "order.created", { changed: true }),
    );
    const again = (await log.get("evt_1"))!;
    expect(again).toMatchObject({
      status: "handled",
      attempts: 2,
      payload: { id: "evt_1", data: { total: 12.3 } },
      receivedAt: first.receivedAt,
    });
    // An ok outcome replaces the failed one whole: no stale error is left behind.
    expect(again.handlers).toEqual({ sync: { status: "ok", attempts: 2 }, audit: { status: "ok", attempts: 1 } });
    // A replay aimed at one handler records only that one; the others keep their outcomes.
    await log.recordAttempt({ ...attempt("evt_1", "failed", { audit: { status: "failed", error: "x".repeat(20_000) } }), newRound: true });
    const third = (await log.get("evt_1"))!;
    expect(third).toMatchObject({
      status: "failed",
      attempts: 3,
      handlers: { sync: { status: "ok", attempts: 2 }, audit: { status: "failed", attempts: 2 } },
    });
    // Error text is cut to its bound, with a marker saying so.
    expect(third.handlers.audit!.error).toBe(`${"x".repeat(8192)}… [cut: 11808 of 20000 characters]`);
    expect(await log.get("evt_missing")).toBeUndefined();
  });

  it("group-commits attempts that end together, the same event's attempts in order, each call told its own outcome", async () => {
    const calls = [
      ...Array.from({ length: 30 }, (_, i) => attempt(`evt_g${i}`, "handled", { sync: { status: "ok" } })),
      // One event's attempts ending together (a replay beside a retry): one statement may not touch a row twice.
      attempt("evt_dup", "received", { sync: { status: "failed", error: "first" } }),
      attempt("evt_dup", "received", { sync: { status: "failed", error: "second" } }),
      attempt("evt_dup", "handled", { sync: { status: "ok" } }),
    ];
    await Promise.all(calls.map((c) => log.recordAttempt(c)));
    expect(
      await sql<{ n: number }>`select count(*)::int as n from events where status = 'handled'`
        .execute(database.db)
        .then((r) => r.rows[0]!.n),
    ).toBe(31);
    expect(await log.get("evt_dup")).toMatchObject({ status: "handled", attempts: 3, handlers: { sync: { status: "ok", attempts: 3 } } });
    // A bad attempt among good ones fails alone, before any statement.
    const mixed = await Promise.allSettled([
      log.recordAttempt(attempt("evt_ok", "handled")),
      log.recordAttempt(attempt("evt_bad", "handled", {}, "t", { n: 1n })),
    ]);
    expect(mixed.map((r) => r.status)).toEqual(["fulfilled", "rejected"]);
    expect(await log.get("evt_ok")).toMatchObject({ status: "handled", attempts: 1, handlers: {} });
  });

  it.each([
    ["the retry's record lands first", ["handled", "received"]],
    ["the late first attempt's record lands first", ["received", "handled"]],
  ] as const)("never lets a late attempt lower the status within a round (%s)", async (_, order) => {
    const outcomes = {
      received: attempt("evt_race", "received", { sync: { status: "failed", error: "timeout" } }),
      handled: attempt("evt_race", "handled", { sync: { status: "ok" } }),
    };
    // Both writes at once: one group-committed batch, in this order.
    await Promise.all(order.map((status) => log.recordAttempt(outcomes[status])));
    expect(await log.get("evt_race")).toMatchObject({ status: "handled", attempts: 2, handlers: { sync: { status: "ok", attempts: 2 } } });
    // And in separate statements, the late one last.
    await log.recordAttempt(attempt("evt_race2", "failed", { sync: { status: "failed", error: "gone" } }));
    await log.recordAttempt(attempt("evt_race2", "received", { sync: { status: "failed", error: "late" }, audit: { status: "ok" } }));
    expect(await log.get("evt_race2")).toMatchObject({
      status: "failed",
      attempts: 2,
      handlers: { sync: { status: "failed", error: "gone", attempts: 2 }, audit: { status: "ok", attempts: 1 } },
    });
  });

  it("lets a replay's first attempt start a new round, whose status replaces a final one", async () => {
    await log.recordAttempt(attempt("evt_round", "handled", { sync: { status: "ok" } }));
    await log.recordAttempt({ ...attempt("evt_round", "received", { sync: { status: "failed", error: "503" } }), newRound: true });
    expect(await log.get("evt_round")).toMatchObject({ status: "received", handlers: { sync: { status: "failed", attempts: 2 } } });
  });

  it("refuses malformed attempts, changing nothing; a row the database refuses fails only its own call", async () => {
    await expect(log.recordAttempt(attempt("", "handled"))).rejects.toBeInstanceOf(EventLogError);
    await expect(log.recordAttempt(attempt("evt_x", "handled", {}, "t", { n: 1n }))).rejects.toMatchObject({ field: "payload" });
    await expect(log.recordAttempt(attempt("evt_x", "done" as "handled"))).rejects.toMatchObject({ field: "status" });
    await expect(log.recordAttempt(attempt("evt_x", "handled", { sync: { status: "maybe" as "ok" } }))).rejects.toMatchObject({
      field: "status",
    });
    await expect(log.recordAttempt(attempt("evt_x", "handled", { "": { status: "ok" } }))).rejects.toMatchObject({ field: "key" });
    expect(await sql<{ n: number }>`select count(*)::int as n from events`.execute(database.db).then((r) => r.rows[0]!.n)).toBe(0);
    // text cannot hold \u0000 (the edge refuses such an id): the database refuses the batched
    // statement, then that row alone.
    const refused = await Promise.allSettled([
      log.recordAttempt(attempt("evt_a", "handled")),
      log.recordAttempt(attempt("evt_b\u0000", "handled")),
      log.recordAttempt(attempt("evt_c", "handled")),
    ]);
    expect(refused.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(await log.get("evt_a")).toMatchObject({ status: "handled", attempts: 1 });
    expect(await log.get("evt_b")).toBeUndefined();
  });

  it("keeps a payload holding what jsonb refuses (\\u0000, lone surrogates) escaped, and reads it back as sent", async () => {
    const payload = { s: "a\u0000b", k: { "\u0000": ["\ud800", "\udfff x"] }, ok: "🙂" };
    await log.recordAttempt(attempt("evt_nul", "handled", { h: { status: "failed", error: "bad\u0000name \ud800" } }, "t", payload));
    expect(await log.get("evt_nul")).toMatchObject({ payload, handlers: { h: { error: "bad\\u0000name \ufffd" } } });
  });

  it("queries by time, type pattern, status and handler, oldest first, page by page", async () => {
    await log.recordAttempt(attempt("e1", "handled", {}, "order.created"));
    await log.recordAttempt(attempt("e2", "failed", { sync: { status: "failed", error: "boom" } }, "order.status_changed"));
    await log.recordAttempt(attempt("e3", "handled", {}, "orders_x.created"));
    await log.recordAttempt(attempt("e4", "handled", {}, "booking.created"));
    await log.recordAttempt(
      attempt("e5", "failed", { sync: { status: "ok" }, mail: { status: "failed", error: "smtp" } }, "order.refunded"),
    );
    for (const [id, at] of [
      ["e1", "2026-11-20T10:00:00Z"],
      ["e2", "2026-11-20T10:00:00.999Z"],
      ["e3", "2026-11-20T10:00:01Z"],
      ["e4", "2026-11-20T10:00:01Z"],
      ["e5", "2026-11-21T00:00:00Z"],
    ] as const)
      await receivedAt(id, at);
    const middle = new Date("2026-11-20T10:00:01Z");

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

  it("names in each summary the record its event is about, from data.id, or none", async () => {
    await log.recordAttempt(attempt("evt_order", "handled", {}, "order.created", { data: { id: "ord_123" } }));
    await log.recordAttempt(attempt("evt_item", "handled", {}, "menu_item.updated", { data: { id: "itm_9" } }));
    await log.recordAttempt(attempt("evt_long", "handled", {}, "booking.created", { data: { id: "b".repeat(201) } }));
    await log.recordAttempt(attempt("evt_ping", "handled", {}, "ping", { data: { id: "x_1" } }));
    const records = Object.fromEntries((await log.query({})).data.map((e) => [e.id, e.record]));
    expect(records).toEqual({
      evt_order: { kind: "orders", id: "ord_123" },
      evt_item: { kind: "menu-items", id: "itm_9" },
      evt_long: null,
      evt_ping: null,
    });
  });

  it("refuses a query it cannot apply, naming the field", async () => {
    const bad: [EventQuery, string][] = [
      [{ type: "order.%" }, "type"],
      [{ type: "ORDER.*" }, "type"],
      [{ status: "done" as "handled" }, "status"],
      [{ handlerStatus: "ok" }, "handlerStatus"],
      [{ limit: 0 }, "limit"],
      [{ since: new Date("nope") }, "since"],
      [{ cursor: "garbage!" }, "cursor"],
    ];
    for (const [query, field] of bad)
      await expect(log.query(query), JSON.stringify(query)).rejects.toMatchObject({ code: "invalid_filter", field });
  });

  it("prunes events received before a time, in batches, and keeps the rest", async () => {
    await Promise.all(Array.from({ length: 7 }, (_, i) => log.recordAttempt(attempt(`old_${i}`, "handled", {}, "order.created", { i }))));
    await log.recordAttempt(attempt("new_1", "handled"));
    await database.db.updateTable("events").set({ received_at: "2026-10-01T00:00:00Z" }).where("id", "like", "old_%").execute();
    const cutoff = new Date((await log.get("new_1"))!.receivedAt.getTime() - 24 * 3600_000);
    expect(await log.prune(cutoff, 3)).toBe(7);
    expect(await ids({})).toEqual(["new_1"]);
    expect(await log.prune(cutoff, 3)).toBe(0);
    await expect(log.prune(cutoff, 0)).rejects.toMatchObject({ field: "batchSize" });
  });
});
