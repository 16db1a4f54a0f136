import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEventLog, type EventLog, listFailureGroups } from "../../src/mirror/event-log.js";
import { CHANGE_LIST_LIMIT, listCausedChanges, listChangesBySource } from "../../src/mirror/record-story.js";
import { openTestDatabase, testDrivers, type TestDatabase } from "../helpers/postgres.js";

// The reads behind the console (issue 23 item 1): the log newest first, failures grouped, the
// change events that followed an event.

/** Every page of a query, following nextCursor to the end. */
async function allIds(log: EventLog, query: Parameters<EventLog["query"]>[0]) {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 200; pages++) {
    const page = await log.query({ ...query, ...(cursor ? { cursor } : {}) });
    ids.push(...page.data.map((e) => e.id));
    cursor = page.nextCursor ?? undefined;
    if (!cursor) break;
  }
  return ids;
}

const failed = (error: string) => JSON.stringify({ status: "failed", attempts: 1, error, stack: `Error: ${error}\n    at handler` });

describe.each(testDrivers())("console reads (%s)", (driver) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await openTestDatabase(driver);
  });
  afterAll(() => database.close());

  it("pages the log newest first, each event once, through equal timestamps", async () => {
    await database.truncate();
    // 30 events, three to a millisecond, so ties on received_at are broken by id.
    await sql`insert into events (id, type, status, payload, handlers, received_at)
      select 'evt_' || lpad(g::text, 3, '0'), 'order.created', 'handled', '{}'::jsonb, '{}'::jsonb,
             timestamptz '2026-11-01' + (g / 3) * interval '1 ms'
      from generate_series(1, 30) g`.execute(database.db);
    const oldestFirst = await allIds(createEventLog(database.db), { limit: 1000 });
    expect(oldestFirst).toHaveLength(30);
    const log = createEventLog(database.db);
    const newest = await allIds(log, { limit: 7, newestFirst: true });
    expect(newest).toEqual([...oldestFirst].reverse());
    const since = await allIds(log, { limit: 5, newestFirst: true, since: new Date("2026-11-01T00:00:00.005Z") });
    expect(since).toEqual(oldestFirst.slice(14).reverse());
  });

  it("groups failed and retrying outcomes by handler, error's first line and status, largest first", async () => {
    await database.truncate();
    const insert = (id: string, status: string, handlers: string, at: string) =>
      sql`insert into events (id, type, status, payload, handlers, received_at)
          values (${id}, 'order.created', ${status}, '{}'::jsonb, ${handlers}::jsonb, ${at}::timestamptz)`.execute(database.db);
    await insert(
      "evt_1",
      "failed",
      `{"print": ${failed("printer offline\nmore detail")}, "sync": {"status":"ok","attempts":1}}`,
      "2026-11-24T05:00:00Z",
    );
    await insert("evt_2", "failed", `{"print": ${failed("printer offline\nother detail")}}`, "2026-11-24T05:10:00Z");
    await insert("evt_3", "received", `{"print": ${failed("printer offline")}}`, "2026-11-24T05:20:00Z");
    await insert("evt_4", "failed", `{"mail": ${failed("smtp 550")}}`, "2026-11-24T05:30:00Z");
    await insert("evt_old", "failed", `{"mail": ${failed("smtp 550")}}`, "2026-11-20T00:00:00Z");
    await insert("evt_ok", "handled", `{"print": {"status":"ok","attempts":2}}`, "2026-11-24T05:40:00Z");
    const groups = await listFailureGroups(database.db, { since: new Date("2026-11-24T00:00:00Z") }, 5000);
    expect(groups.map((g) => [g.handler, g.error, g.status, g.events, g.sampleId])).toEqual([
      ["print", "printer offline", "failed", 2, "evt_2"],
      ["mail", "smtp 550", "failed", 1, "evt_4"],
      ["print", "printer offline", "received", 1, "evt_3"],
    ]);
    const until = await listFailureGroups(
      database.db,
      { since: new Date("2026-11-24T00:00:00Z"), until: new Date("2026-11-24T05:15:00Z") },
      5000,
    );
    expect(until.map((g) => [g.handler, g.events])).toEqual([["print", 2]]);
  });

  it("finds the change events recorded for the record an event named, at or after it", async () => {
    await database.truncate();
    const change = (id: string, recordId: string, at: string, type = "change.order") =>
      sql`insert into events (id, type, status, payload, handlers, received_at) values (${id}, ${type}, 'handled',
          ${JSON.stringify({ id, type, data: { kind: "order", id: recordId, before: { status: "PENDING" }, after: { status: "CONFIRMED" }, changed: ["status"], source: "webhook" } })}::jsonb,
          '{}'::jsonb, ${at}::timestamptz)`.execute(database.db);
    await change("chg_before", "ord_1", "2026-11-24T04:59:59Z");
    await change("chg_a", "ord_1", "2026-11-24T05:00:01Z");
    await change("chg_other_record", "ord_2", "2026-11-24T05:00:02Z");
    await change("chg_other_kind", "ord_1", "2026-11-24T05:00:03Z", "change.booking");
    const event = { type: "order.status_changed", payload: { data: { id: "ord_1" } }, receivedAt: new Date("2026-11-24T05:00:00Z") };
    const found = await listCausedChanges(database.db, event, 5000);
    expect(found.map((c) => c.id)).toEqual(["chg_a"]);
    expect(found[0]).toMatchObject({
      kind: "order",
      recordId: "ord_1",
      changed: ["status"],
      source: "webhook",
      after: { status: "CONFIRMED" },
    });
    expect(await listCausedChanges(database.db, { ...event, type: "review.created" }, 5000)).toEqual([]);
    expect(await listCausedChanges(database.db, { ...event, payload: { data: { id: 7 } } }, 5000)).toEqual([]);
  });

  it("lists one source's changes since a moment, of the log and of the history alike, newest first, one account's", async () => {
    await database.truncate();
    const data = (id: string, source: string) => ({
      kind: "order",
      id,
      before: { status: "PENDING" },
      after: { status: "CANCELLED" },
      changed: ["status"],
      source,
    });
    const logged = (id: string, source: string, at: string, account = "default") =>
      sql`insert into events (account_id, id, type, status, payload, handlers, received_at) values (${account}, ${id}, 'change.order', 'handled',
          ${JSON.stringify({ id, type: "change.order", data: data(`ord_${id}`, source) })}::jsonb, '{}'::jsonb, ${at}::timestamptz)`.execute(
        database.db,
      );
    const history = (id: string, source: string, at: string) =>
      sql`insert into record_changes (account_id, id, type, record_kind, record_id, payload, created_at)
          values ('default', ${id}, 'change.order', 'order', ${`ord_${id}`}, ${JSON.stringify(data(`ord_${id}`, source))}::jsonb, ${at}::timestamptz)`.execute(
        database.db,
      );
    await sql`delete from accounts where id = 'acme'`.execute(database.db);
    await sql`insert into accounts (id, api_key, signing_secrets) values ('acme', 'sealed', '{}')`.execute(database.db);
    await logged("chg_old", "reconcile", "2026-11-24T03:00:00Z");
    await logged("chg_e1", "reconcile", "2026-11-24T05:00:01Z");
    await history("chg_h1", "reconcile", "2026-11-24T05:00:02Z");
    await logged("chg_hook", "webhook", "2026-11-24T05:00:03Z");
    await history("chg_import", "backfill", "2026-11-24T05:00:04Z");
    await logged("chg_acme", "reconcile", "2026-11-24T05:00:05Z", "acme");
    await logged("chg_e2", "reconcile", "2026-11-24T05:00:06Z");
    const since = new Date("2026-11-24T05:00:00Z");
    const missed = await listChangesBySource(database.db, { source: "reconcile", since }, 5000);
    expect(missed.map((c) => [c.id, c.recordId, c.event])).toEqual([
      ["chg_e2", "ord_chg_e2", true],
      ["chg_h1", "ord_chg_h1", false],
      ["chg_e1", "ord_chg_e1", true],
    ]);
    expect(missed[1]).toMatchObject({ kind: "order", changed: ["status"], source: "reconcile", after: { status: "CANCELLED" } });
    expect((await listChangesBySource(database.db, { source: "reconcile", since, account: "acme" }, 5000)).map((c) => c.id)).toEqual([
      "chg_acme",
    ]);
    expect((await listChangesBySource(database.db, { source: "backfill", since }, 5000)).map((c) => c.id)).toEqual(["chg_import"]);
  });

  it("lists at most its limit, the newest, however many a sweep found", async () => {
    await database.truncate();
    // 5,000 missed changes in the hour: half logged, half history.
    await sql`insert into events (id, type, status, payload, handlers, received_at)
      select 'chg_e' || lpad(g::text, 5, '0'), 'change.order', 'handled',
             jsonb_build_object('data', jsonb_build_object('kind', 'order', 'id', 'ord_' || g, 'source', 'reconcile', 'changed', '[]'::jsonb)),
             '{}'::jsonb, timestamptz '2026-11-24T05:00:00Z' + (2 * g) * interval '1 ms'
      from generate_series(1, 2500) g`.execute(database.db);
    await sql`insert into record_changes (account_id, id, type, record_kind, record_id, payload, created_at)
      select 'default', 'chg_h' || lpad(g::text, 5, '0'), 'change.order', 'order', 'ord_h' || g,
             jsonb_build_object('kind', 'order', 'id', 'ord_h' || g, 'source', 'reconcile', 'changed', '[]'::jsonb),
             timestamptz '2026-11-24T05:00:00Z' + (2 * g + 1) * interval '1 ms'
      from generate_series(1, 2500) g`.execute(database.db);
    const listed = await listChangesBySource(database.db, { source: "reconcile", since: new Date("2026-11-24T05:00:00Z") }, 5000);
    expect(listed).toHaveLength(CHANGE_LIST_LIMIT);
    expect(listed[0]?.id).toBe("chg_h02500");
    expect(listed[1]?.id).toBe("chg_e02500");
    expect(listed.at(-1)?.id).toBe(`chg_e${String(2500 - CHANGE_LIST_LIMIT / 2 + 1).padStart(5, "0")}`);
  });
});
