import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createPostgresMirror, type MirrorRecord, type MirrorStore } from "../../src/mirror/mirror-store.js";
import { EventIdentifierError, parseEnvelope } from "../../src/events/envelope.js";
import { createSandbox } from "../../src/sandbox/index.js";
import { openTestDatabase, preferredDriver, type TestDatabase } from "../helpers/postgres.js";

// Issue 40, bug 6: one id rule from the edge to the mirror to the routes. An id no route can
// address ("." and ".." are dot segments, removed from any URL before a route sees it; control
// characters are refused by every operator route) is refused at the mirror's write and set aside
// with its reason, as the edge refuses it as an event id.

let database: TestDatabase;
let mirror: MirrorStore;
beforeAll(async () => {
  database = await openTestDatabase(preferredDriver());
}, 60_000);
afterAll(() => database.close());
beforeEach(async () => {
  await database.truncate();
  mirror = createPostgresMirror(database.db);
});

/** A real order as the sandbox lists it, under another id. */
function orderWithId(id: string): MirrorRecord {
  const sandbox = createSandbox({ restaurants: 1, seed: 3 });
  const [order] = sandbox.state.orders();
  return { ...(JSON.parse(JSON.stringify(order)) as MirrorRecord), id };
}

describe("one id rule from the edge to the mirror", () => {
  it.each([".", "..", "ord\t1", "ord\u202e"])(
    "an upstream record id %j the edge refuses as an event id is set aside at the write",
    async (id) => {
      const edge = (() => {
        try {
          parseEnvelope(new TextEncoder().encode(JSON.stringify({ id, type: "order.created" })));
          return "accepted";
        } catch (err) {
          return err instanceof EventIdentifierError ? "refused" : "other";
        }
      })();
      const good = orderWithId("ord_good");
      const result = await mirror.upsert("orders", [orderWithId(id), good], await mirror.clock());
      expect({ edge, written: result.written, rejected: result.rejected.map((r) => [r.id, r.field]) }).toEqual(
        edge === "refused" ? { edge, written: 1, rejected: [[id, "id"]] } : { edge, written: 2, rejected: [] },
      );
      expect(await mirror.get("orders", "ord_good")).toBeDefined();
      if (edge === "refused") {
        expect(await mirror.get("orders", id)).toBeUndefined();
        const [row] = await mirror.rejections("orders");
        expect(row).toMatchObject({ reason: "invalid_field" });
        expect(row?.detail).toMatch(/field id must be/);
      }
    },
  );

  it("'..' in particular: refused by the edge and set aside by the mirror with the reason named", async () => {
    expect(() => parseEnvelope(new TextEncoder().encode('{"id":"..","type":"order.created"}'))).toThrow(EventIdentifierError);
    const result = await mirror.upsert("orders", [orderWithId("..")], await mirror.clock());
    expect(result.written).toBe(0);
    expect(result.rejected).toMatchObject([{ id: "..", field: "id", reason: "invalid_field" }]);
    expect((await mirror.rejections("orders")).map((r) => [r.id, r.detail])).toEqual([["..", expect.stringContaining('"." or ".."')]]);
  });
});
