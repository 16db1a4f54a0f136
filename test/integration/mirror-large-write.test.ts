import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPostgresMirror, type MirrorStore } from "../../src/mirror/mirror-store.js";
import { createMirrorWriter } from "../../src/mirror/change-outbox.js";
import type { RecordedChange } from "../../src/mirror/change-outbox.js";
import { orderRecord } from "../helpers/mirror-records.js";
import { openTestDatabase, testDrivers, type TestDatabase } from "../helpers/postgres.js";

// Issue 32 item 1: the mirror write of a 10,000-record page took one advisory lock per record in
// one transaction and exhausted PostgreSQL's shared lock table. Cut into transactions of 100 ids,
// a write of any size holds 100 locks at a time; each record's row, line items and change event
// still commit together.
describe.each(testDrivers())("a 2,000-record write (%s)", (driver) => {
  let database: TestDatabase;
  let mirror: MirrorStore;
  beforeAll(async () => {
    database = await openTestDatabase(driver);
    mirror = createPostgresMirror(database.db);
  });
  afterAll(() => database.close());

  const count = async (table: "orders" | "order_items" | "change_outbox") =>
    Number((await sql<{ n: string }>`select count(*) as n from ${sql.table(table)}`.execute(database.db)).rows[0]!.n);

  it("commits every record with its line items and its change event, and a later read of it reports exactly the records it changed", async () => {
    const ids = Array.from({ length: 2000 }, (_, i) => `ord_${String(i).padStart(5, "0")}`);
    const recorded: RecordedChange[] = [];
    const writer = createMirrorWriter(mirror, { onRecorded: (c) => recorded.push(...c) });
    const first = await writer.write(
      "orders",
      ids.map((id) => orderRecord(id)),
      await mirror.clock(),
      "backfill",
    );
    expect(first).toMatchObject({ written: 2000, skipped: 0 });
    expect(first.changes).toHaveLength(2000);
    expect(await count("orders")).toBe(2000);
    expect(await count("order_items")).toBe(4000);
    expect(await count("change_outbox")).toBe(2000);
    // Every transaction's changes are reported once the write is done, not only the last one's.
    expect(recorded).toHaveLength(2000);

    const later = ids.map((id, i) => orderRecord(id, i % 2 === 0 ? { status: "CONFIRMED" } : {}));
    const second = await writer.write("orders", later, await mirror.clock(), "reconcile");
    expect(second.changes.map((c) => c.id)).toEqual(ids.filter((_, i) => i % 2 === 0));
    expect(await count("change_outbox")).toBe(3000);
    expect((await mirror.get("orders", ids[1998]!))?.status).toBe("CONFIRMED");
    expect((await mirror.get("orders", ids[1999]!))?.status).toBe("PENDING");
  });

  it.runIf(driver === "server")("holds at most 100 of its advisory locks at any moment (watched from another connection)", async () => {
    // Ids of this test only: other suites on the same server take advisory locks of their own.
    const tag = randomUUID().slice(0, 8);
    const ids = Array.from({ length: 2000 }, (_, i) => `ord_${tag}_${i}`);
    // This write's lock keys as pg_locks shows them: a bigint key is (classid << 32) | objid.
    const held = async () =>
      Number(
        (
          await sql<{ n: string }>`select count(*) as n from pg_locks l
            join (select hashtextextended(${`mirror:${mirror.account}:orders:`} || id, 0) as k from unnest(${ids}::text[]) as id) ours
            on l.locktype = 'advisory' and ((l.classid::bigint << 32) | l.objid::bigint) = ours.k`.execute(database.db)
        ).rows[0]!.n,
      );
    const write = { done: false };
    let most = 0;
    const watching = (async () => {
      while (!write.done) most = Math.max(most, await held());
    })();
    try {
      await mirror.upsert(
        "orders",
        ids.map((id) => orderRecord(id)),
        await mirror.clock(),
      );
    } finally {
      write.done = true;
      await watching;
    }
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(100);
  });
});
