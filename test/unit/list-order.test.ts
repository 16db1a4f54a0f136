import { describe, expect, it } from "vitest";
import { createListOrder, readList } from "../../src/upstream/paginate.js";

const t = (iso: string) => Date.parse(iso);

describe("list order read off the data", () => {
  it("tells newest first from the keys of one page, and which targets that page already passed", () => {
    const order = createListOrder();
    order.observe([t("2026-11-20"), t("2026-11-19"), t("2026-11-19"), t("2026-11-10")]);
    expect(order.direction).toBe("descending");
    // Older than the last record seen: could still come. Newer: would have come already.
    expect(order.passed(t("2026-11-01"))).toBe(false);
    expect(order.passed(t("2026-11-15"))).toBe(true);
    // A tie with the last key may still follow it.
    expect(order.passed(t("2026-11-10"))).toBe(false);
  });

  it("tells oldest first across pages (a booking list by date)", () => {
    const order = createListOrder();
    order.observe([t("2026-01-01")]);
    expect(order.direction).toBe("unknown");
    order.observe([t("2026-01-02"), t("2026-01-05")]);
    expect(order.direction).toBe("ascending");
    expect(order.passed(t("2026-01-03"))).toBe(true);
    expect(order.passed(t("2026-01-09"))).toBe(false);
  });

  it("says unknown, and that nothing was passed, for a list in no order or with no usable keys", () => {
    const mixed = createListOrder();
    mixed.observe([t("2026-01-02"), t("2026-01-01"), t("2026-01-03")]);
    expect(mixed.direction).toBe("unknown");
    expect(mixed.passed(t("2025-01-01"))).toBe(false);
    expect(mixed.passed(t("2027-01-01"))).toBe(false);
    const empty = createListOrder();
    empty.observe([NaN, NaN]);
    expect(empty.direction).toBe("unknown");
    expect(empty.passed(0)).toBe(false);
    // One step against the direction seen is unknown for good.
    const flipped = createListOrder();
    flipped.observe([3, 2, 1]);
    flipped.observe([5]);
    expect(flipped.direction).toBe("unknown");
  });
});

interface P {
  data: { id: string }[];
  nextCursor: string | null;
}
const handled = () => Promise.resolve({});

describe("the list reader's next page", () => {
  /** A list of `pages` pages of one record each; page i's cursor is `c<i>`. Notes every cursor asked for. */
  const list = (pages: number) => {
    const asked: (string | undefined)[] = [];
    const fetchPage = (cursor: string | undefined): Promise<P> => {
      asked.push(cursor);
      const i = cursor === undefined ? 0 : Number(cursor.slice(1));
      return Promise.resolve({ data: [{ id: `r${i}` }], nextCursor: i + 1 < pages ? `c${i + 1}` : null });
    };
    return { asked, walk: { fetchPage, sortKey: () => NaN, readAhead: true } };
  };

  it("is asked for while the page in hand is handled, so the page's write overlaps the next call's wait", async () => {
    const { asked, walk } = list(3);
    const askedWhileHandling: (string | undefined)[][] = [];
    const result = await readList(walk, async (page) => {
      await Promise.resolve();
      askedWhileHandling.push([...asked]);
      expect(page.data).toHaveLength(1);
      return {};
    });
    expect(result.end).toBe("end");
    expect(askedWhileHandling).toEqual([
      [undefined, "c1"],
      [undefined, "c1", "c2"],
      [undefined, "c1", "c2"],
    ]);
  });

  it("waits in a walk that does not read ahead (a refresh's page may settle it), and never goes past the budget", async () => {
    const targeted = list(5);
    const settledWalk = await readList({ ...targeted.walk, readAhead: false, targets: new Map([["r0", undefined]]) }, () => {
      expect(targeted.asked).toEqual([undefined]);
      return handled();
    });
    expect(settledWalk.end).toBe("settled");
    expect(targeted.asked).toEqual([undefined]);

    const budgeted = list(5);
    expect((await readList({ ...budgeted.walk, maxPages: 2 }, handled)).end).toBe("budget");
    expect(budgeted.asked).toEqual([undefined, "c1"]);

    const paused = list(5);
    let answers = 2;
    const pausedWalk = await readList({ ...paused.walk, goOn: () => Promise.resolve(answers-- > 0) }, handled);
    // Paused after the second page: the third, asked for while the second was handled, is dropped.
    expect(pausedWalk).toMatchObject({ end: "paused", pages: 2, cursor: "c2" });
    expect(paused.asked).toEqual([undefined, "c1", "c2"]);
  });

  it("is dropped, its failure unheard, when the walk stops at the page in hand", async () => {
    const asked: (string | undefined)[] = [];
    const fetchPage = (cursor: string | undefined): Promise<P> => {
      asked.push(cursor);
      if (cursor !== undefined) return Promise.reject(new Error("the next page failed"));
      return Promise.resolve({ data: [{ id: "r0" }], nextCursor: "c1" });
    };
    const result = await readList({ fetchPage, sortKey: () => NaN, readAhead: true }, () => Promise.resolve({ stop: true }));
    expect(result).toMatchObject({ end: "stopped", pages: 1 });
    expect(asked).toEqual([undefined, "c1"]);
    // A failure of the next page is the walk's once it is the page in hand.
    await expect(readList({ fetchPage, sortKey: () => NaN, readAhead: true }, handled)).rejects.toThrow("the next page failed");
  });
});
