import { describe, expect, it } from "vitest";
import { createInflightEntries } from "../../src/queue/stream-consumer.js";

const MiB = 1024 * 1024;

describe("in-flight stream entries", () => {
  it("offers as much room as entries are free while bytes are far from the budget", () => {
    const slots = createInflightEntries({ maxEntries: 10, maxBytes: 16 * MiB, largestEntryBytes: 1000 });
    expect(slots.room()).toBe(10);
    slots.add("1-0", 500);
    slots.add("2-0", 500);
    expect(slots.room()).toBe(8);
    slots.remove("1-0");
    expect(slots.room()).toBe(9);
    expect(slots.figures()).toEqual({ entries: 1, bytes: 500, peakBytes: 1000 });
  });

  it("asks for no more entries than the bytes left hold at the largest entry size", () => {
    const slots = createInflightEntries({ maxEntries: 10, maxBytes: 4 * MiB, largestEntryBytes: MiB });
    expect(slots.room()).toBe(4);
    slots.add("1-0", MiB);
    slots.add("2-0", MiB);
    slots.add("3-0", MiB);
    expect(slots.room()).toBe(1);
    slots.add("4-0", MiB);
    expect(slots.room()).toBe(0);
  });

  it("always lets one entry run when none is held, even one larger than the whole budget", () => {
    const slots = createInflightEntries({ maxEntries: 10, maxBytes: 1024, largestEntryBytes: MiB });
    expect(slots.room()).toBe(1);
    slots.add("1-0", MiB);
    expect(slots.room()).toBe(0);
  });

  it("wakes a reader waiting for room when an entry is removed, and reports empty", async () => {
    const slots = createInflightEntries({ maxEntries: 1, maxBytes: MiB, largestEntryBytes: 10 });
    slots.add("1-0", 10);
    const room = slots.whenRoom(60_000);
    const empty = slots.whenEmpty();
    slots.remove("1-0");
    await Promise.all([room, empty]);
    expect(slots.room()).toBe(1);
  });
});
