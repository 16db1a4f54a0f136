import { describe, expect, it } from "vitest";
import { createFairSlots } from "../../src/queue/fair-slots.js";

/** A task that records its start and ends when released. */
function gatedTasks() {
  const started: string[] = [];
  const releases = new Map<string, () => void>();
  const task = (name: string) => () => {
    started.push(name);
    return new Promise<string>((resolve) => releases.set(name, () => resolve(name)));
  };
  const release = async (name: string) => {
    releases.get(name)?.();
    // Let the freed slot start the next task.
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  return { started, task, release };
}

describe("fair handler slots", () => {
  it("gives a freed slot to the next account waiting, not to the flood ahead of it", async () => {
    const slots = createFairSlots(2);
    const { started, task, release } = gatedTasks();
    const flood = Array.from({ length: 6 }, (_, i) => slots("flood", task(`f${i}`)));
    const quiet = slots("quiet", task("q0"));
    await release("none");
    expect(started).toEqual(["f0", "f1"]);
    await release("f0");
    // The quiet company's one event runs next, ahead of the flood's four waiting.
    expect(started).toEqual(["f0", "f1", "q0"]);
    await release("q0");
    await release("f1");
    expect(started).toEqual(["f0", "f1", "q0", "f2", "f3"]);
    for (const name of ["f2", "f3", "f4", "f5"]) await release(name);
    expect(await Promise.all([...flood, quiet])).toEqual(["f0", "f1", "f2", "f3", "f4", "f5", "q0"]);
  });

  it("shares the slots evenly between two busy accounts, whichever queued first", async () => {
    const slots = createFairSlots(2);
    const { started, task, release } = gatedTasks();
    for (let i = 0; i < 4; i++) void slots("a", task(`a${i}`));
    for (let i = 0; i < 4; i++) void slots("b", task(`b${i}`));
    await release("none");
    expect(started).toEqual(["a0", "a1"]);
    for (const name of ["a0", "a1", "b0", "a2", "b1", "a3"]) await release(name);
    expect(started).toEqual(["a0", "a1", "b0", "a2", "b1", "a3", "b2", "b3"]);
  });

  it("runs one account's tasks in arrival order, never more than the slots at once, and passes a failure on", async () => {
    const slots = createFairSlots(3);
    let running = 0;
    let most = 0;
    const order: number[] = [];
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        slots("one", async () => {
          running++;
          most = Math.max(most, running);
          order.push(i);
          await new Promise((r) => setImmediate(r));
          running--;
          if (i === 7) throw new Error("seventh");
          return i;
        }),
      ),
    );
    expect(order).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(most).toBe(3);
    expect(results[7]).toMatchObject({ status: "rejected", reason: new Error("seventh") });
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(19);
  });
});
