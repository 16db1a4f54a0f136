import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MIRROR_PAGE_BYTES, createPostgresMirror, type MirrorStore } from "../../src/mirror/mirror-store.js";
import { orderRecord } from "../helpers/mirror-records.js";
import { openTestDatabase, testDrivers, type TestDatabase } from "../helpers/postgres.js";

// Three orders of ~5 MB each (a long note the API passed through) beside two small ones.
const BIG = 5 * 1024 * 1024;
const ORDERS = [
  orderRecord("ord_1", { note: "a".repeat(BIG) }),
  orderRecord("ord_2", { note: "b".repeat(BIG) }),
  orderRecord("ord_3", { note: "c".repeat(BIG) }),
  orderRecord("ord_4"),
  orderRecord("ord_5"),
];

describe.each(testDrivers())("GET /mirror pages are bounded in bytes (%s)", (driver) => {
  let database: TestDatabase;
  let mirror: MirrorStore;
  beforeAll(async () => {
    database = await openTestDatabase(driver);
    mirror = createPostgresMirror(database.db);
    await mirror.upsert("orders", ORDERS, await mirror.clock());
  });
  afterAll(() => database.close());

  it("answers a record over the budget alone and whole, and goes on by nextCursor with none lost", async () => {
    const pages: string[][] = [];
    let cursor: string | undefined;
    for (let n = 0; n < 10; n++) {
      const page = await mirror.list("orders", { limit: 100, ...(cursor ? { cursor } : {}) });
      pages.push(page.data.map((r) => r.id));
      const json = JSON.stringify(page.data);
      if (page.data.length > 1) expect(Buffer.byteLength(json)).toBeLessThanOrEqual(MIRROR_PAGE_BYTES);
      if (!page.nextCursor) break;
      cursor = page.nextCursor;
    }
    expect(pages).toEqual([["ord_1"], ["ord_2"], ["ord_3"], ["ord_4", "ord_5"]]);
    const first = await mirror.list("orders", { limit: 1 });
    expect(first.data[0]).toMatchObject({ note: "a".repeat(BIG) });
  });
});
