import { describe, expect, it } from "vitest";
import type { Booking, CreateBookingInput } from "../../src/upstream/models.js";
import { reached, sameBooking } from "../../src/worker/durable-steps.js";
import { StepError } from "../../src/worker/errors.js";
import { MAX_STEP_RESULT_BYTES, stepResultJson } from "../../src/worker/durable-steps.js";

describe("a step's result as JSON", () => {
  it("stores JSON as is, undefined as nothing, and drops undefined properties as JSON does", () => {
    expect(stepResultJson("s", { id: "bk_1", n: 2, ok: true, tags: ["a"], none: null })).toBe(
      '{"id":"bk_1","n":2,"ok":true,"tags":["a"],"none":null}',
    );
    expect(stepResultJson("s", undefined)).toBeUndefined();
    expect(stepResultJson("s", null)).toBe("null");
    expect(stepResultJson("s", { a: 1, b: undefined })).toBe('{"a":1}');
    expect(stepResultJson("s", Object.assign(Object.create(null) as object, { a: 1 }))).toBe('{"a":1}');
  });

  it.each([
    [10n, "result is a BigInt (return it as a string)"],
    [() => 1, "result is a function"],
    [{ at: new Date(0) }, "result.at is a Date (return date.toISOString())"],
    [[1, Number.NaN], "result[1] is NaN"],
    [{ x: Infinity }, "result.x is Infinity"],
    [new Map([["a", 1]]), "result is a Map object"],
    [[undefined], "result[0] is undefined (return null)"],
    [Symbol("s"), "result is a symbol"],
  ])("refuses %s with a clear error", (value, what) => {
    const error = (() => {
      try {
        stepResultJson("book", value);
      } catch (err) {
        return err;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(StepError);
    expect(error).toMatchObject({ code: "step_result_not_json", message: `step "book" must return JSON, but ${what}` });
  });

  it("refuses a cycle and a result over the size limit", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => stepResultJson("s", cyclic)).toThrow(/result.self is a reference back to itself/);
    // The same object twice (not a cycle) is fine.
    const shared = { a: 1 };
    expect(stepResultJson("s", [shared, shared])).toBe('[{"a":1},{"a":1}]');
    expect(() => stepResultJson("s", "x".repeat(MAX_STEP_RESULT_BYTES))).toThrow(
      expect.objectContaining({ code: "step_result_too_large" }) as Error,
    );
  });
});

describe("looking for a step's earlier effect", () => {
  const input: CreateBookingInput = {
    restaurantId: "rest_1",
    date: "2026-12-24",
    time: "19:30",
    partySize: 4,
    diner: { name: "Ada", email: "ada@example.com" },
  };
  const booking: Booking = {
    id: "bk_1",
    restaurantId: "rest_1",
    date: "2026-12-24T00:00:00.000Z",
    time: "19:30",
    partySize: 4,
    status: "CONFIRMED",
    confirmCode: "ABC123",
    diner: { name: "Ada", email: "Ada@Example.com" },
  };

  it("a booking is the same when restaurant, day, time, party size and diner match", () => {
    expect(sameBooking(booking, input)).toBe(true);
    expect(sameBooking({ ...booking, time: "19:30:00" }, input)).toBe(true);
    expect(sameBooking({ ...booking, partySize: 5 }, input)).toBe(false);
    expect(sameBooking({ ...booking, date: "2026-12-25" }, input)).toBe(false);
    expect(sameBooking({ ...booking, restaurantId: "rest_2" }, input)).toBe(false);
    expect(sameBooking({ ...booking, diner: { name: "Grace", email: "ada@example.com" } }, input)).toBe(false);
  });

  it("an order has reached a status when it is in it or further along the forward line", () => {
    expect(reached("READY", "READY")).toBe(true);
    expect(reached("DELIVERED", "PREPARING")).toBe(true);
    expect(reached("CONFIRMED", "READY")).toBe(false);
    expect(reached("CANCELLED", "CANCELLED")).toBe(true);
    expect(reached("CANCELLED", "READY")).toBe(false);
    expect(reached("DELIVERED", "CANCELLED")).toBe(false);
  });
});
