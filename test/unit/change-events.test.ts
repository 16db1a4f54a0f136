import { describe, expect, it } from "vitest";
import { CHANGE_SOURCES, isChangeEventType, matchesChange, type ChangeData, type ChangeEvent } from "../../src/events/catalog.js";
import { changeListenersOf } from "../../src/events/change-listeners.js";
import { onChange } from "../../src/events/catalog.js";
import { type HandlerContext } from "../../src/worker/handlers.js";
import type { Order } from "../../src/upstream/models.js";
import { mirrorKindOfChange } from "../../src/mirror/kinds.js";

const order = (fields: Partial<Order> = {}): Order => ({
  id: "ord_1",
  restaurantId: "rest_1",
  bookingId: null,
  type: "DINE_IN",
  status: "PREPARING",
  subtotal: 10,
  tax: 1,
  tip: 0,
  total: 11,
  currency: "EUR",
  paidAt: null,
  refundedAt: null,
  createdAt: "2026-11-23T10:00:00.000Z",
  items: [],
  ...fields,
});
const change = (before: Order | null, after: Order, changed: string[]): ChangeEvent<"order"> => ({
  id: "chg_1",
  type: "change.order",
  createdAt: "2026-11-23T10:00:01.000Z",
  data: {
    kind: "order",
    id: after.id,
    restaurantId: after.restaurantId,
    before,
    after,
    changed,
    source: "webhook",
  } satisfies ChangeData<"order">,
});
const ctx = {} as HandlerContext;

describe("onChange: a filtered change handler", () => {
  it("returns the entry for the kind's change type", () => {
    expect(Object.keys(onChange("order", { field: "status" }, () => undefined))).toEqual(["change.order"]);
    expect(Object.keys(onChange("menu_item", { field: "stock" }, () => undefined))).toEqual(["change.menu_item"]);
  });

  it("runs the handler only when the field changed to `to`, from `from`", async () => {
    const seen: string[] = [];
    const entry = onChange("order", { field: "status", from: "PREPARING", to: "READY" }, (e) => void seen.push(e.id));
    const run = (e: ChangeEvent<"order">) => entry["change.order"](e, ctx);
    await run({ ...change(order(), order({ status: "READY" }), ["status"]), id: "match" });
    await run({ ...change(order({ status: "CONFIRMED" }), order({ status: "READY" }), ["status"]), id: "other-from" });
    await run({ ...change(order(), order({ status: "DELIVERED" }), ["status"]), id: "other-to" });
    await run({ ...change(null, order({ status: "READY" }), ["status"]), id: "first-sight" });
    await run({ ...change(order({ status: "READY", tip: 0 }), order({ status: "READY", tip: 2 }), ["tip"]), id: "tip-only" });
    expect(seen).toEqual(["match"]);
  });

  it("without from/to, matches any change of the field (first sight included)", () => {
    expect(matchesChange(change(null, order(), ["id", "status"]).data, { field: "status" })).toBe(true);
    expect(matchesChange(change(order(), order({ tip: 1 }), ["tip"]).data, { field: "status" })).toBe(false);
  });

  it("compares values deeply (arrays and objects)", () => {
    const items = [{ id: "oi_1", menuItemId: "mi_1", name: "Pho", quantity: 2, price: 9, notes: null }];
    expect(matchesChange(change(order(), order({ items }), ["items"]).data, { field: "items", to: structuredClone(items) })).toBe(true);
  });

  it("runs the handler only for the sources given: a list, or one", async () => {
    const seen: string[] = [];
    const live = onChange("order", { field: "status", source: ["webhook", "reconcile"] }, (e) => void seen.push(`live:${e.data.source}`));
    const imported = onChange("order", { field: "status", source: "backfill" }, (e) => void seen.push(`imported:${e.data.source}`));
    for (const source of ["webhook", "reconcile", "backfill"] as const) {
      const event = change(order(), order({ status: "READY" }), ["status"]);
      event.data.source = source;
      await live["change.order"](event, ctx);
      await imported["change.order"](event, ctx);
    }
    expect(seen).toEqual(["live:webhook", "live:reconcile", "imported:backfill"]);
  });

  it("refuses, when it is made, a filter the kind's schema refuses (as a JavaScript module may write it)", () => {
    const make = (kind: string, filter: object) => () => onChange(kind as "order", filter as never, () => undefined);
    expect(make("order", { field: "colour" })).toThrow(/^onChange\("order"\): field "colour" is not one of order's: id, restaurantId,/);
    expect(make("order", { field: "status", to: "READDY" })).toThrow('onChange("order"): to "READDY" is not a value status can take');
    expect(make("order", { field: "total", from: "12.50" })).toThrow('from "12.50" is not a value total can take');
    expect(make("order", { field: "status", source: ["webhook", "catch-up"] })).toThrow(
      'source "catch-up" is not one of webhook, reconcile, backfill',
    );
    expect(make("review", { field: "rating" })).toThrow('onChange("review"): the kind "review" is not one of order, booking, menu_item');
    expect(make("order", null as never)).toThrow("the filter is an object { field, from?, to?, source? }");
    // The spec leaves booking statuses open: any string is one.
    expect(make("booking", { field: "status", to: "NO_SHOW" })).not.toThrow();
  });

  it("a handler's failure propagates (so its job is retried)", async () => {
    const entry = onChange("order", { field: "status" }, () => Promise.reject(new Error("down")));
    await expect(entry["change.order"](change(order(), order({ status: "READY" }), ["status"]), ctx)).rejects.toThrow("down");
  });
});

describe("the reserved change namespace", () => {
  it("is every type starting with change.", () => {
    expect(["change.order", "change.booking", "change.menu_item", "change.x"].every(isChangeEventType)).toBe(true);
    expect(["order.changed", "changelog.updated", "review.created"].some(isChangeEventType)).toBe(false);
  });
});

describe("mirrorKindOfChange", () => {
  it("finds the record page's kind of every change kind, and none for a kind that has no changes", () => {
    expect(mirrorKindOfChange("order")).toBe("orders");
    expect(mirrorKindOfChange("booking")).toBe("bookings");
    expect(mirrorKindOfChange("menu_item")).toBe("menu-items");
    expect(mirrorKindOfChange("review")).toBeUndefined();
    expect(mirrorKindOfChange("orders")).toBeUndefined();
  });
});

describe("who receives a change (changeListenersOf): what decides whether a change becomes an event", () => {
  const noop = () => undefined;
  it("no change handler: no change of any kind or source is received", () => {
    const listens = changeListenersOf([{ "order.created": noop }]);
    for (const source of CHANGE_SOURCES) expect(listens("change.order", source)).toBe(false);
  });
  it("a change.<kind> handler receives its kind from every source, an onChange with a source only those", () => {
    const listens = changeListenersOf([
      { "change.booking": [{ name: "audit", handle: noop }] },
      onChange("order", { field: "status", source: ["webhook", "reconcile"] }, noop),
      onChange("menu_item", { field: "price" }, noop),
    ]);
    expect(CHANGE_SOURCES.map((s) => listens("change.booking", s))).toEqual([true, true, true]);
    expect(CHANGE_SOURCES.map((s) => listens("change.order", s))).toEqual([true, true, false]);
    expect(CHANGE_SOURCES.map((s) => listens("change.menu_item", s))).toEqual([true, true, true]);
  });
  it("a '*' handler receives every change", () => {
    expect(changeListenersOf([{ "*": noop }])("change.order", "backfill")).toBe(true);
  });
});
