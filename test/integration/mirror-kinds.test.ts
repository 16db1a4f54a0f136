import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KINDS, MIRROR_KINDS } from "../../src/mirror/kinds.js";
import { openTestDatabase, preferredDriver, type TestDatabase } from "../helpers/postgres.js";

// The kinds table (src/mirror/kinds.ts) against what the migrations built, which history fixes:
// each kind's table exists, and the event log's generated record_kind (0013_event_records) names
// the kind for its events' family and for its change events. A new row that the schema does not
// match fails here, not on a page.

describe("the mirror's kinds and the schema", () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await openTestDatabase(preferredDriver());
  });
  afterAll(() => database.close());

  it("has a table for every kind", async () => {
    const { rows } = await sql<{ name: string }>`select table_name as name from information_schema.tables
      where table_schema = current_schema()`.execute(database.db);
    const tables = new Set(rows.map((r) => r.name));
    expect(MIRROR_KINDS.filter((kind) => !tables.has(KINDS[kind].table))).toEqual([]);
  });

  it("names the kind in record_kind for its events' family and its change events", async () => {
    await database.truncate();
    const events = MIRROR_KINDS.flatMap((kind) => {
      const { family, changeKind } = KINDS[kind];
      const own = { id: `evt_${family}`, type: `${family}.anything`, payload: { data: { id: "rec_1" } }, kind };
      const change = changeKind && {
        id: `chg_${family}`,
        type: `change.${changeKind}`,
        payload: { data: { kind: changeKind, id: "rec_1" } },
        kind,
      };
      return change ? [own, change] : [own];
    });
    for (const e of events)
      await sql`insert into events (id, type, status, payload, handlers, received_at)
        values (${e.id}, ${e.type}, 'handled', ${JSON.stringify(e.payload)}::jsonb, '{}'::jsonb, clock_timestamp())`.execute(database.db);
    const { rows } = await sql<{ id: string; record_kind: string | null }>`select id, record_kind from events`.execute(database.db);
    const kindOf = new Map(rows.map((r) => [r.id, r.record_kind]));
    expect(events.map((e) => [e.id, kindOf.get(e.id)])).toEqual(events.map((e) => [e.id, e.kind]));
  });
});
