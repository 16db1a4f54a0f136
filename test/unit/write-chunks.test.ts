import { describe, expect, it } from "vitest";
import { chunkWrite, IDS_PER_TRANSACTION, type PreparedRecord } from "../../src/mirror/mirror-store.js";
import type { Rejection } from "../../src/mirror/set-aside-records.js";

const prepared = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `ord_${i}`, rank: 0, row: {} }) as unknown as PreparedRecord);
const rejections = (n: number) => Array.from({ length: n }, (_, i) => ({ key: `bad_${i}` }) as unknown as Rejection);

// Issue 32 item 1: a 10,000-record page took one advisory lock per record in one transaction.
describe("chunkWrite: the transactions a write is cut into", () => {
  it("gives a page of 2,000 records and 50 rejections 21 transactions of at most 100 ids, each id once, in order", () => {
    const chunks = chunkWrite(prepared(2000), rejections(50));
    expect(IDS_PER_TRANSACTION).toBe(100);
    expect(chunks).toHaveLength(21);
    for (const c of chunks) expect(c.prepared.length + c.rejections.length).toBeLessThanOrEqual(IDS_PER_TRANSACTION);
    expect(chunks.flatMap((c) => c.prepared.map((p) => p.id))).toEqual(prepared(2000).map((p) => p.id));
    expect(chunks.flatMap((c) => c.rejections.map((r) => r.key))).toEqual(rejections(50).map((r) => r.key));
  });

  it("writes a small page in one transaction, and nothing in none", () => {
    expect(chunkWrite(prepared(100), [])).toHaveLength(1);
    expect(chunkWrite(prepared(60), rejections(40))).toHaveLength(1);
    expect(chunkWrite([], [])).toEqual([]);
  });
});
