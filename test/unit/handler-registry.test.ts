import { describe, expect, it } from "vitest";
import { EventDataError, type AnyEvent } from "../../src/events/catalog.js";
import { createHandlerRegistry, dispatchEvent } from "../../src/events/dispatch.js";

const order = (data: Record<string, unknown> = { id: "ord_1", restaurantId: "rest_1" }): AnyEvent => ({
  id: "evt_1",
  type: "order.created",
  data,
});

describe("handler registry and dispatch", () => {
  it("runs the type's handlers and every '*' handler, each with the event", async () => {
    const seen: string[] = [];
    const registry = createHandlerRegistry<{ tag: string }>();
    registry.on("order.created", (e, ctx) => void seen.push(`typed:${e.data.id}:${ctx.tag}`));
    registry.onAny((e) => void seen.push(`any:${e.type}`));
    registry.on("booking.created", () => void seen.push("wrong"));
    const result = await dispatchEvent(registry, order(), { tag: "ctx" });
    expect(seen.sort()).toEqual(["any:order.created", "typed:ord_1:ctx"]);
    expect(result.failures).toEqual([]);
    expect(result.succeeded.sort()).toEqual(["app:*", "app:order.created"]);
  });

  it("sends unknown types to '*' only", async () => {
    const seen: string[] = [];
    const registry = createHandlerRegistry<object>();
    registry.onAny((e) => void seen.push(e.type));
    const result = await dispatchEvent(registry, { id: "e", type: "loyalty.points_awarded" }, {});
    expect(seen).toEqual(["loyalty.points_awarded"]);
    expect(result.failures).toEqual([]);
  });

  it("runs every handler when one throws, and reports each outcome", async () => {
    const seen: string[] = [];
    const registry = createHandlerRegistry<object>();
    registry.use({ "order.created": () => Promise.reject(new Error("boom")) }, "user");
    registry.use({ "order.created": () => void seen.push("sync ran") }, "sync");
    const result = await dispatchEvent(registry, order(), {});
    expect(seen).toEqual(["sync ran"]);
    expect(result.succeeded).toEqual(["sync:order.created"]);
    expect(result.failures.map((f) => f.key)).toEqual(["user:order.created"]);
  });

  it("reports a handler that succeeded but whose progress could not be saved once, as succeeded, with the save failure apart", async () => {
    const registry = createHandlerRegistry<object>();
    registry.use({ "order.created": () => undefined }, "sync");
    const saveFailed = new Error("progress not saved");
    const result = await dispatchEvent(registry, order(), {}, new Set(), () => Promise.reject(saveFailed));
    expect(result.succeeded).toEqual(["sync:order.created"]);
    expect(result.failures).toEqual([]);
    expect(result.unsaved).toEqual([{ key: "sync:order.created", error: saveFailed }]);
  });

  it("skips handlers that already succeeded on an earlier attempt", async () => {
    let runs = 0;
    const registry = createHandlerRegistry<object>();
    registry.use(
      {
        "order.created": () => {
          runs++;
        },
      },
      "sync",
    );
    await dispatchEvent(registry, order(), {}, new Set(["sync:order.created"]));
    expect(runs).toBe(0);
  });

  it("fails a known event's typed handlers without running them when its data lacks its identifiers, and still runs '*' handlers", async () => {
    const seen: string[] = [];
    const registry = createHandlerRegistry<object>();
    registry.on("order.created", () => void seen.push("typed"), "user");
    registry.onAny((e) => void seen.push(`any:${e.id}`), "user");
    const result = await dispatchEvent(registry, order({ id: "ord_1" }), {});
    // The catch-all sees the event as delivered, as it sees an unknown type.
    expect(seen).toEqual(["any:evt_1"]);
    expect(result.succeeded).toEqual(["user:*"]);
    expect(result.failures.map((f) => f.key)).toEqual(["user:order.created"]);
    expect(result.failures[0]?.error).toBeInstanceOf(EventDataError);
  });

  it("accepts a thin payload and keeps unknown fields of a full one", async () => {
    const got: unknown[] = [];
    const registry = createHandlerRegistry<object>();
    registry.on("order.status_changed", (e) => void got.push(e.data));
    await dispatchEvent(registry, { id: "e1", type: "order.status_changed", data: { id: "o", restaurantId: "r" } }, {});
    await dispatchEvent(
      registry,
      { id: "e2", type: "order.status_changed", data: { id: "o", restaurantId: "r", status: "READY", extra: 1 } },
      {},
    );
    expect(got).toEqual([
      { id: "o", restaurantId: "r" },
      { id: "o", restaurantId: "r", status: "READY", extra: 1 },
    ]);
  });

  it("types the fields the API's schema knows, leaving out a value of another type, and keeps the rest as sent", async () => {
    const typed: Record<string, unknown>[] = [];
    const asSent: unknown[] = [];
    const registry = createHandlerRegistry<object>();
    registry.on("order.status_changed", (e) => void typed.push(e.data));
    registry.onAny((e) => void asSent.push(e.data));
    const data = { id: "o", restaurantId: "r", status: "ON_HOLD", total: "12.50", paidAt: null, tip: 2, loyaltyTier: "gold" };
    const result = await dispatchEvent(registry, { id: "e3", type: "order.status_changed", data }, {});
    expect(result.failures).toEqual([]);
    expect(typed[0]).toStrictEqual({
      id: "o",
      restaurantId: "r",
      status: undefined,
      total: undefined,
      paidAt: null,
      tip: 2,
      loyaltyTier: "gold",
    });
    expect(asSent).toEqual([data]);
  });

  it("refuses a handler that is not a function", () => {
    const registry = createHandlerRegistry<object>();
    expect(() => registry.use({ "order.created": "nope" as never }, "user")).toThrow(/must be a function/);
  });
});
