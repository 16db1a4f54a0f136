import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPostgresMirror, type MirrorStore } from "../../src/mirror/mirror-store.js";
import { later, menuItemRecord } from "../helpers/mirror-records.js";
import { openTestDatabase, type TestDatabase } from "../helpers/postgres.js";

// Issue 21 item 9: an upsert locks every id it writes (transaction-scoped advisory locks). Taken
// in sorted order per 200-record chunk only, two large writes over overlapping ids whose chunks
// fall differently (one starts 100 ids later) each held part of the other's next chunk: deadlock.
// One global order across the whole write makes them queue instead.

const ids = (from: number, count: number) => Array.from({ length: count }, (_, i) => `mi_${String(from + i).padStart(5, "0")}`);

describe("advisory lock order of large upserts (server)", () => {
  let database: TestDatabase;
  let mirror: MirrorStore;
  beforeAll(async () => {
    database = await openTestDatabase("server");
    mirror = createPostgresMirror(database.db);
  });
  afterAll(() => database.close());

  it("two concurrent 1,000-record writes over 900 shared ids, in opposite orders, both commit (no deadlock)", async () => {
    const t0 = await mirror.clock();
    for (let round = 0; round < 3; round++) {
      const a = ids(0, 1000).map((id) => menuItemRecord(id, { stock: round }));
      const b = ids(100, 1000)
        .reverse()
        .map((id) => menuItemRecord(id, { stock: round + 100 }));
      const outcomes = await Promise.allSettled([
        mirror.upsert("menu-items", a, later(t0, 2 * round + 1)),
        mirror.upsert("menu-items", b, later(t0, 2 * round + 2)),
      ]);
      expect(outcomes.map((o) => (o.status === "rejected" ? String(o.reason) : "ok"))).toEqual(["ok", "ok"]);
    }
    // The later read wins every shared id, whichever write committed first.
    const stored = await mirror.all("menu-items");
    expect(stored).toHaveLength(1100);
    expect(stored.filter((r) => r.stock === 102)).toHaveLength(1000);
  });
});
