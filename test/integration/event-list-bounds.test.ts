import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { MAX_PAGE_BYTES, summaryStatement, createEventLog, type EventLog, validateEventQuery } from "../../src/mirror/event-log.js";
import { createDatabase } from "../../src/mirror/database.js";
import { toHttpFailure } from "../../src/http/errors.js";
import { openTestDatabase, testDrivers, type TestDatabase } from "../helpers/postgres.js";
import { startService, type TestService } from "../helpers/service.js";

// Issue 21 item 6: operator reads of the event log are bounded by bytes, by an index, by a
// statement timeout on the operator pool.

/** `count` events in one statement: `handlers` and `payload` as SQL expressions of the row number g. */
const seed = (db: TestDatabase["db"], count: number, handlers = sql`'{}'::jsonb`, payload = sql`'{}'::jsonb`, status = sql`'handled'`) =>
  sql`insert into events (id, type, status, payload, handlers, received_at)
      select 'evt_' || lpad(g::text, 7, '0'), case when g % 2 = 0 then 'order.created' else 'booking.created' end, ${status},
             ${payload}, ${handlers}, timestamptz '2026-11-01' + g * interval '1 ms'
      from generate_series(1, ${count}) g`.execute(db);

/** Every page of a query, following nextCursor to the end. */
async function allPages(log: EventLog, query: Parameters<EventLog["query"]>[0]) {
  const pages = [];
  let cursor: string | undefined;
  do {
    const page = await log.query({ ...query, ...(cursor ? { cursor } : {}) });
    pages.push(page);
    cursor = page.nextCursor ?? undefined;
  } while (cursor && pages.length < 1000);
  return pages;
}

describe.each(testDrivers())("event list bounds (%s)", (driver) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await openTestDatabase(driver);
  });
  afterAll(() => database.close());

  it("lists summaries without payloads and cuts long handler errors; GET by id has the payload", async () => {
    await database.truncate();
    await seed(
      database.db,
      20,
      sql`jsonb_build_object('mail', jsonb_build_object('status', 'failed', 'attempts', 1, 'error', repeat('e', 2000), 'stack', repeat('s', 5000)))`,
      sql`jsonb_build_object('blob', repeat('x', 1000000))`,
    );
    const log = createEventLog(database.db);
    const page = await log.query({ limit: 100 });
    expect(page.data).toHaveLength(20);
    expect(page.nextCursor).toBeNull();
    expect(Buffer.byteLength(JSON.stringify(page))).toBeLessThan(64 * 1024);
    expect(page.data[0]).not.toHaveProperty("payload");
    expect(page.data[0]!.handlers.mail).toEqual({ status: "failed", attempts: 1, error: `${"e".repeat(300)}…` });
    const whole = await log.get(page.data[0]!.id);
    expect((whole!.payload as { blob: string }).blob).toHaveLength(1_000_000);
    expect(whole!.handlers.mail).toMatchObject({ error: "e".repeat(2000), stack: "s".repeat(5000) });
  });

  it("cuts a page at its byte budget and the cursor carries on, each event once", async () => {
    await database.truncate();
    // 40 handlers with long errors: ~13 KB of summary per event.
    await seed(
      database.db,
      60,
      sql`(select jsonb_object_agg('handler_' || h, jsonb_build_object('status', 'failed', 'attempts', 1, 'error', repeat('e', 2000))) from generate_series(1, 40) h)`,
    );
    const log = createEventLog(database.db, { bounds: { maxPageBytes: 100_000 } });
    const pages = await allPages(log, { limit: 1000 });
    for (const page of pages) expect(Buffer.byteLength(JSON.stringify(page.data))).toBeLessThanOrEqual(100_000);
    expect(pages.length).toBeGreaterThan(1);
    const ids = pages.flatMap((p) => p.data.map((e) => e.id));
    expect(ids).toEqual(Array.from({ length: 60 }, (_, i) => `evt_${String(i + 1).padStart(7, "0")}`));
  });

  describe.runIf(driver === "server")("on a server", () => {
    beforeAll(async () => {
      await database.truncate();
      await seed(
        database.db,
        100_000,
        sql`case when g % 5000 = 0 then '{"rare": {"status": "failed", "attempts": 1}}'::jsonb else '{"sync": {"status": "ok", "attempts": 1}}'::jsonb end`,
        sql`'{}'::jsonb`,
        sql`case when g % 2 = 0 then 'handled' else 'failed' end`,
      );
      await sql`analyze events`.execute(database.db);
    });

    it("answers a handler filter from the GIN index, not a scan of the log", async () => {
      const plans: Record<string, unknown> = {};
      for (const query of [{ handler: "rare" }, { handler: "rare", handlerStatus: "failed" as const }]) {
        const statement = summaryStatement(validateEventQuery({ ...query, limit: 100 }), 101);
        const { rows } = await sql<{ "QUERY PLAN": [{ Plan: PlanNode }] }>`explain (analyze, format json) ${statement}`.execute(
          database.db,
        );
        const nodes = flatten(rows[0]!["QUERY PLAN"][0].Plan);
        plans[JSON.stringify(query)] = nodes.map((n) => `${n["Node Type"]}${n["Index Name"] ? ` on ${n["Index Name"]}` : ""}`);
        expect(nodes.map((n) => n["Node Type"])).not.toContain("Seq Scan");
        expect(nodes.map((n) => n["Index Name"])).toContain("events_handlers_idx");
        // Rows read and thrown away: none to speak of, where a scan reads all 100,000.
        const discarded = nodes.reduce((sum, n) => sum + (n["Rows Removed by Filter"] ?? 0) + (n["Rows Removed by Index Recheck"] ?? 0), 0);
        expect(discarded).toBeLessThan(100);
      }
      console.log("PLANS", JSON.stringify(plans));
    });

    it("cancels an operator read past OPERATOR_QUERY_TIMEOUT_MS: a clear 503, on a pool apart from the worker's", async () => {
      // type order.* and status failed are each half of the log and never meet: every plan reads ~50,000 rows, far past 1 ms.
      const hurried = await createDatabase({ url: inject("databaseUrl"), dataDir: "", schema: database.schema, operatorQueryTimeoutMs: 1 });
      try {
        const log = createEventLog(hurried.db, { reader: hurried.operatorDb, bounds: { timeoutMs: 1 } });
        const error = await log.query({ type: "order.*", status: "failed" }).catch((e: unknown) => e);
        expect(error).toMatchObject({ code: "query_timeout" });
        const failure = toHttpFailure(error);
        expect(failure.status).toBe(503);
        expect(failure.body.error.message).toMatch(/longer than 1 ms \(OPERATOR_QUERY_TIMEOUT_MS\)/);
        // The worker's pool has no such limit: the same read there completes.
        expect((await createEventLog(hurried.db).query({ type: "order.*", status: "failed" })).data).toEqual([]);
      } finally {
        await hurried.close();
      }
    });
  });
});

interface PlanNode {
  "Node Type": string;
  "Index Name"?: string;
  "Rows Removed by Filter"?: number;
  "Rows Removed by Index Recheck"?: number;
  Plans?: PlanNode[];
}
const flatten = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(flatten)];

describe("GET /events over HTTP", () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService({ ROLE: "web" });
  });
  afterAll(() => svc.stop());

  it("answers limit=100 over 1 MB events in a page within its byte budget; the payload comes per event", async () => {
    await seed(svc.database.db, 40, sql`'{}'::jsonb`, sql`jsonb_build_object('blob', repeat('x', 1000000))`);
    const res = await svc.admin("/events?limit=100");
    expect(res.status).toBe(200);
    const bytes = (await res.arrayBuffer()).byteLength;
    expect(bytes).toBeLessThan(MAX_PAGE_BYTES);
    const one = await svc.admin("/events/evt_0000001");
    expect(((await one.json()) as { payload: { blob: string } }).payload.blob).toHaveLength(1_000_000);
  });
});
