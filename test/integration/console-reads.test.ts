import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEventLog, type EventLog, listFailureGroups } from "../../src/mirror/event-log.js";
import { listCausedChanges } from "../../src/mirror/record-story.js";
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
});
