import { describe, expect, it } from "vitest";
import { UnavailableError } from "../../src/base/deadline.js";
import { groupCommit } from "../../src/base/group-commit.js";

describe("groupCommit", () => {
  it("writes items that arrive together in one batch, each caller getting its own result", async () => {
    const batches: number[][] = [];
    const add = groupCommit((items: number[]) => {
      batches.push(items);
      return Promise.resolve(items.map((i) => i * 10));
    }, 100);
    expect(await Promise.all([add(1), add(2), add(3)])).toEqual([10, 20, 30]);
    expect(batches).toEqual([[1, 2, 3]]);
  });

  it("queues items behind a batch in flight and splits at maxBatch", async () => {
    const batches: number[][] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const add = groupCommit(async (items: number[]) => {
      batches.push(items);
      if (batches.length === 1) await gate;
      return items;
    }, 2);
    const first = add(1);
    await new Promise((r) => setImmediate(r));
    const rest = [add(2), add(3), add(4)];
    release();
    expect(await Promise.all([first, ...rest])).toEqual([1, 2, 3, 4]);
    expect(batches).toEqual([[1], [2, 3], [4]]);
  });

  it("rejects every caller of a failed batch and carries on with the next", async () => {
    let calls = 0;
    const add = groupCommit((items: string[]) => (++calls === 1 ? Promise.reject(new Error("redis down")) : Promise.resolve(items)), 10);
    const failed = await Promise.allSettled([add("a"), add("b")]);
    expect(failed.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    expect(await add("c")).toBe("c");
  });

  it("with a deadline, refuses every caller of a batch never acknowledged, and of the batch queued behind it", async () => {
    const batches: string[][] = [];
    // A write that never answers, like a Redis that stopped responding.
    const add = groupCommit(
      (items: string[]) => {
        batches.push(items);
        return new Promise<string[]>(() => undefined);
      },
      10,
      { ms: 50, what: "enqueue" },
    );
    const first = add("a");
    await new Promise((r) => setImmediate(r));
    const queued = add("b");
    await Promise.all([expect(first).rejects.toBeInstanceOf(UnavailableError), expect(queued).rejects.toBeInstanceOf(UnavailableError)]);
    // The queued item went out on its own deadline (or was refused without a write if none was left).
    expect(batches[0]).toEqual(["a"]);
    expect(batches.length).toBeLessThanOrEqual(2);
  });
});
