import { sql } from "kysely";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/logging/logger.js";
import { createStepStore, type StepStore } from "../../src/mirror/step-store.js";
import { createDurableSteps, type DurableSteps, type StepFunction } from "../../src/worker/durable-steps.js";
import { StepError } from "../../src/worker/errors.js";
import { captureLogs } from "../helpers/log-capture.js";
import { openTestDatabase, testDrivers, type TestDatabase } from "../helpers/postgres.js";

describe.each(testDrivers())("durable steps (%s)", (driver) => {
  let database: TestDatabase;
  let store: StepStore;
  let steps: DurableSteps;
  const logger = createLogger({ level: "debug", destination: captureLogs().stream });
  beforeAll(async () => {
    database = await openTestDatabase(driver);
    store = createStepStore(database.db);
    steps = createDurableSteps(store);
  });
  afterAll(() => database.close());
  beforeEach(async () => {
    await sql`delete from steps`.execute(database.db);
  });

  const stepOf = (attempt: number, eventId = "evt_1", handlerKey = "user:order.created:0"): StepFunction =>
    steps.forHandler({ eventId, handlerKey, attempt, logger });

  it("runs a step once: a later attempt gets the stored result back without running it", async () => {
    let runs = 0;
    const make = () => {
      runs++;
      return Promise.resolve({ id: `bk_${runs}`, at: "2026-11-24T19:00:00.000Z", party: 4 });
    };
    const first = await stepOf(1)("create booking", make);
    const second = await stepOf(2)("create booking", make);
    expect(runs).toBe(1);
    expect(second).toEqual(first);
    expect(first).toEqual({ id: "bk_1", at: "2026-11-24T19:00:00.000Z", party: 4 });
    const [record] = await store.forEvent("evt_1");
    expect(record).toMatchObject({
      handler: "user:order.created:0",
      name: "create booking",
      status: "done",
      runs: 1,
      attempt: 1,
      resultBytes: Buffer.byteLength(JSON.stringify(first)),
      error: null,
    });
    expect(record!.durationMs).toBeGreaterThanOrEqual(0);
    expect(record!.finishedAt).toBeInstanceOf(Date);
  });

  it("keys steps by event and handler: the same name in another handler or event runs on its own", async () => {
    const results = [
      await stepOf(1, "evt_1", "a")("s", () => Promise.resolve(1)),
      await stepOf(1, "evt_1", "b")("s", () => Promise.resolve(2)),
      await stepOf(1, "evt_2", "a")("s", () => Promise.resolve(3)),
    ];
    expect(results).toEqual([1, 2, 3]);
  });

  it("refuses a name used twice in one attempt, with a clear error, and runs the second function never", async () => {
    const step = stepOf(1);
    await step("notify", () => Promise.resolve("sent"));
    let ran = false;
    const error: unknown = await step("notify", () => {
      ran = true;
      return Promise.resolve(ran);
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StepError);
    expect(error).toMatchObject({ code: "duplicate_step" });
    expect((error as StepError).message).toContain('step "notify" ran twice in one attempt');
    expect(ran).toBe(false);
    // The next attempt may use it again (once): it gets the stored result.
    expect(await stepOf(2)("notify", () => Promise.resolve("again"))).toBe("sent");
  });

  it("refuses a bad name or a missing function", async () => {
    const step = stepOf(1);
    await expect(step("", () => Promise.resolve(1))).rejects.toMatchObject({ code: "invalid_step_name" });
    await expect(step("x".repeat(201), () => Promise.resolve(1))).rejects.toMatchObject({ code: "invalid_step_name" });
    await expect(step("no fn", undefined as unknown as () => Promise<number>)).rejects.toMatchObject({ code: "invalid_step_name" });
    expect(await store.forEvent("evt_1")).toEqual([]);
  });

  it("refuses a result that is not JSON, stores nothing, and runs the step again on the next attempt", async () => {
    await expect(stepOf(1)("big", () => Promise.resolve(10n))).rejects.toMatchObject({
      code: "step_result_not_json",
      message: 'step "big" must return JSON, but result is a BigInt (return it as a string)',
    });
    await expect(stepOf(1)("fn", () => Promise.resolve({ callback: () => 1 }))).rejects.toMatchObject({
      code: "step_result_not_json",
      message: 'step "fn" must return JSON, but result.callback is a function',
    });
    await expect(stepOf(1)("date", () => Promise.resolve([new Date(0)]))).rejects.toMatchObject({ code: "step_result_not_json" });
    expect((await store.forEvent("evt_1")).map((s) => [s.name, s.status, s.resultBytes])).toEqual(
      expect.arrayContaining([
        ["big", "failed", null],
        ["fn", "failed", null],
        ["date", "failed", null],
      ]),
    );
    expect(await stepOf(2)("big", () => Promise.resolve("10"))).toBe("10");
  });

  it("returns undefined for undefined and null for null, on every attempt", async () => {
    await expect(stepOf(1)("nothing", () => Promise.resolve(undefined))).resolves.toBeUndefined();
    expect(await stepOf(1)("null", () => Promise.resolve(null))).toBeNull();
    expect(await stepOf(2)("nothing", () => Promise.resolve("ran again"))).toBeUndefined();
    expect(await stepOf(2)("null", () => Promise.resolve("ran again"))).toBeNull();
    const byName = Object.fromEntries((await store.forEvent("evt_1")).map((s) => [s.name, s.resultBytes]));
    expect(byName).toEqual({ nothing: null, null: 4 });
  });

  it("a step that throws stores nothing, its error propagates, and the next run is a recovery", async () => {
    const boom = new Error("upstream timed out");
    await expect(stepOf(1)("charge", () => Promise.reject(boom))).rejects.toBe(boom);
    expect(await store.forEvent("evt_1")).toEqual([
      expect.objectContaining({ name: "charge", status: "failed", error: "Error: upstream timed out", resultBytes: null }),
    ]);
    let recovery: boolean | undefined;
    const value = await stepOf(2)("charge", () => {
      recovery = steps.current()?.recovery;
      return Promise.resolve("ok");
    });
    expect(value).toBe("ok");
    expect(recovery).toBe(true);
    expect((await store.forEvent("evt_1"))[0]).toMatchObject({ status: "done", runs: 2, attempt: 2, error: null });
  });

  it("runs steps in parallel, each once, and knows which step is running in each", async () => {
    const step = stepOf(1);
    const seen: string[] = [];
    const names = ["a", "b", "c", "d"];
    const results = await Promise.all(
      names.map((name) =>
        step(name, async () => {
          await Promise.resolve();
          seen.push(`${name}:${steps.current()?.name}:${steps.current()?.recovery}`);
          return name.toUpperCase();
        }),
      ),
    );
    expect(results).toEqual(["A", "B", "C", "D"]);
    expect(seen.sort()).toEqual(["a:a:false", "b:b:false", "c:c:false", "d:d:false"]);
    expect(steps.current()).toBeUndefined();
    const again = await Promise.all(names.map((name) => stepOf(2)(name, () => Promise.resolve("ran again"))));
    expect(again).toEqual(["A", "B", "C", "D"]);
  });

  it("two runs of one step that both finish return the result stored first", async () => {
    // Two workers on one event (a lost lock): both ran; both must see one result.
    const key = { eventId: "evt_1", handlerKey: "h", name: "s" };
    await store.claim(key, 1);
    await store.claim(key, 1);
    expect(await store.complete(key, '"first"', 5)).toBe('"first"');
    expect(await store.complete(key, '"second"', 5)).toBe('"first"');
  });

  it("forgets an event's steps (of one handler when given), so they run again", async () => {
    await stepOf(1, "evt_1", "a")("s", () => Promise.resolve(1));
    await stepOf(1, "evt_1", "b")("s", () => Promise.resolve(1));
    await stepOf(1, "evt_2", "a")("s", () => Promise.resolve(1));
    expect(await store.forget(["evt_1"], "a")).toBe(1);
    expect((await store.forEvent("evt_1")).map((s) => s.handler)).toEqual(["b"]);
    expect(await store.forget(["evt_1", "evt_2", "evt_unknown"])).toBe(2);
    expect(await store.forget([])).toBe(0);
    expect(await stepOf(2, "evt_2", "a")("s", () => Promise.resolve(2))).toBe(2);
  });

  it("prunes steps started before the retention bound, in batches", async () => {
    for (const name of ["old1", "old2", "old3", "new"]) await stepOf(1)(name, () => Promise.resolve(name));
    await sql`update steps set started_at = now() - interval '40 days' where name like 'old%'`.execute(database.db);
    expect(await store.prune(new Date(Date.now() - 30 * 86_400_000), 2)).toBe(3);
    expect((await store.forEvent("evt_1")).map((s) => s.name)).toEqual(["new"]);
    await expect(store.prune(new Date("nope"))).rejects.toMatchObject({ code: "invalid_filter" });
  });
});
