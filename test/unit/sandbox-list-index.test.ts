import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compareKeys, createListIndex, type Key, partitionFor } from "../../src/sandbox/store.js";

interface Row {
  id: string;
  restaurantId: string;
  status: string;
  at: number;
  type: string;
}

const keyOf = (r: Row): Key => [r.at, r.id];
const partitionsOf = (r: Row) => ["all", `r:${r.restaurantId}`, `s:${r.status}`, `r:${r.restaurantId}|s:${r.status}`];

const row = fc.record({
  id: fc.constantFrom(...Array.from({ length: 30 }, (_, i) => `id_${i}`)),
  restaurantId: fc.constantFrom("r1", "r2", "r3"),
  status: fc.constantFrom("A", "B", "C"),
  at: fc.integer({ min: 0, max: 40 }), // few values: equal keys are common, ties broken by id
  type: fc.constantFrom("x", "y"),
});
const op = fc.oneof(
  row.map((r) => ({ upsert: r })),
  fc.constantFrom(...Array.from({ length: 30 }, (_, i) => ({ remove: `id_${i}` }))),
);
const query = fc.record({
  restaurantId: fc.option(fc.constantFrom("r1", "r2", "r3"), { nil: undefined }),
  status: fc.option(fc.constantFrom("A", "B", "C"), { nil: undefined }),
  type: fc.option(fc.constantFrom("x", "y"), { nil: undefined }),
  lower: fc.option(fc.integer({ min: 0, max: 40 }), { nil: undefined }),
  upper: fc.option(fc.integer({ min: 0, max: 40 }), { nil: undefined }),
  direction: fc.constantFrom(1 as const, -1 as const),
  limit: fc.integer({ min: 1, max: 7 }),
});

type Query = typeof query extends fc.Arbitrary<infer Q> ? Q : never;

/** The naive list: filter everything, sort everything. */
function naive(rows: Map<string, Row>, q: Query): string[] {
  return [...rows.values()]
    .filter(
      (r) =>
        (!q.restaurantId || r.restaurantId === q.restaurantId) &&
        (!q.status || r.status === q.status) &&
        (!q.type || r.type === q.type) &&
        (q.lower === undefined || r.at >= q.lower) &&
        (q.upper === undefined || r.at <= q.upper),
    )
    .sort((a, b) => q.direction * compareKeys(keyOf(a), keyOf(b)))
    .map((r) => r.id);
}

describe("sandbox list index", () => {
  it("pages through exactly the naive filter-and-sort after any sequence of changes", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80 }), query, (ops, q) => {
        const index = createListIndex<Row>({ keyOf, partitionsOf });
        const rows = new Map<string, Row>();
        for (const o of ops) {
          if ("upsert" in o) {
            // Changed in place, as the store does: the index must find the record's old place itself.
            const existing = rows.get(o.upsert.id);
            const record = existing ? Object.assign(existing, o.upsert) : { ...o.upsert };
            rows.set(record.id, record);
            index.upsert(record);
          } else {
            rows.delete(o.remove);
            index.remove(o.remove);
          }
        }
        const seen: string[] = [];
        let after: Key | undefined;
        for (let pages = 0; pages < 100; pages++) {
          const page = index.page({
            partition: partitionFor(q.restaurantId, q.status),
            direction: q.direction,
            limit: q.limit,
            ...(after ? { after } : {}),
            ...(q.lower === undefined ? {} : { lower: [q.lower] }),
            ...(q.upper === undefined ? {} : { upper: [q.upper] }),
            ...(q.type ? { filter: (r: Row) => r.type === q.type } : {}),
          });
          seen.push(...page.items.map((r) => r.id));
          expect(page.items.length).toBeLessThanOrEqual(q.limit);
          if (!page.more) break;
          expect(page.items).toHaveLength(q.limit);
          after = keyOf(page.items.at(-1)!);
        }
        expect(seen).toEqual(naive(rows, q));
      }),
      { numRuns: 400 },
    );
  });

  it("picks by position within a range without copying", () => {
    const index = createListIndex<Row>({ keyOf, partitionsOf });
    for (let i = 0; i < 10; i++) index.upsert({ id: `id_${i}`, restaurantId: "r1", status: i % 2 ? "A" : "B", at: i, type: "x" });
    expect(index.pick("s:A", 0)?.id).toBe("id_1");
    expect(index.pick("s:A", 0.99)?.id).toBe("id_9");
    expect(index.pick("all", 0, [7])?.id).toBe("id_7");
    expect(index.pick("all", 0, [11])).toBeUndefined();
    expect(index.pick("s:none", 0.5)).toBeUndefined();
    expect(index.size("s:B")).toBe(5);
  });
});
