import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  filterFromQuery,
  createPostgresMirror,
  type MirrorListFilter,
  type MirrorRecord,
  type MirrorStore,
} from "../../src/mirror/mirror-store.js";
import { MirrorFilterError } from "../../src/mirror/errors.js";
import type { MirrorKind } from "../../src/mirror/kinds.js";
import { bookingRecord, menuItemRecord, orderRecord } from "../helpers/mirror-records.js";
import { openTestDatabase, testDrivers, type TestDatabase } from "../helpers/postgres.js";

const ORDERS = [
  orderRecord("ord_01", { restaurantId: "rest_1", status: "PENDING", createdAt: "2026-11-19T23:59:59.999Z" }),
  orderRecord("ord_02", { restaurantId: "rest_1", status: "DELIVERED", createdAt: "2026-11-20T00:00:00.000Z" }),
  orderRecord("ord_03", { restaurantId: "rest_2", status: "DELIVERED", createdAt: "2026-11-20T12:00:00.000Z" }),
  orderRecord("ord_04", { restaurantId: "rest_1", status: "DELIVERED", createdAt: "2026-11-20T13:00:00+01:00" }),
  orderRecord("ord_05", { restaurantId: "rest_2", status: "CANCELLED", createdAt: "2026-11-21T00:00:00.000Z" }),
  orderRecord("ord_06", { restaurantId: "rest_1", status: "REFUNDED", createdAt: "2026-11-22T08:00:00.000Z" }),
  orderRecord("ord_07", { restaurantId: "rest_1", status: "READY", createdAt: "2026-11-22T09:00:00.000Z" }),
];
const BOOKINGS = [
  bookingRecord("bk_1", { date: "2026-11-20" }),
  bookingRecord("bk_2", { date: "2026-11-21", status: "CANCELLED" }),
  bookingRecord("bk_3", { date: "2026-11-22", restaurantId: "rest_2" }),
];

describe.each(testDrivers())("PostgreSQL mirror: operator lists (%s)", (driver) => {
  let database: TestDatabase;
  let mirror: MirrorStore;
  const ids = async (kind: MirrorKind, filter: MirrorListFilter) => (await mirror.list(kind, filter)).data.map((r: MirrorRecord) => r.id);
  beforeAll(async () => {
    database = await openTestDatabase(driver);
    mirror = createPostgresMirror(database.db);
    const at = await mirror.clock();
    await mirror.upsert("orders", [...ORDERS].reverse(), at);
    await mirror.upsert("bookings", BOOKINGS, at);
    await mirror.upsert("menu-items", [menuItemRecord("mi_1")], at);
  });
  afterAll(() => database.close());

  it("walks every page by cursor, in id order, with no record twice", async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const result = await mirror.list("orders", { limit: 3, cursor });
      seen.push(...result.data.map((r) => r.id));
      if (!result.nextCursor) break;
      cursor = result.nextCursor;
    }
    expect(seen).toEqual(ORDERS.map((o) => o.id));
    expect(await mirror.list("orders", { limit: 7 })).toMatchObject({ nextCursor: null });
    expect((await mirror.list("orders")).data).toEqual(ORDERS);
  });

  it("filters orders by restaurant, status and a half-open created_at range (dates are UTC days)", async () => {
    expect(await ids("orders", { restaurantId: "rest_2" })).toEqual(["ord_03", "ord_05"]);
    expect(await ids("orders", { status: "DELIVERED" })).toEqual(["ord_02", "ord_03", "ord_04"]);
    expect(await ids("orders", { restaurantId: "rest_1", status: "DELIVERED", limit: 1 })).toEqual(["ord_02"]);
    expect(await ids("orders", { from: "2026-11-20", to: "2026-11-21" })).toEqual(["ord_02", "ord_03", "ord_04"]);
    expect(await ids("orders", { from: "2026-11-20T12:00:00Z", to: "2026-11-20T12:00:00.001Z" })).toEqual(["ord_03", "ord_04"]);
    expect(await ids("orders", { from: "2026-11-22" })).toEqual(["ord_06", "ord_07"]);
  });

  it("filters bookings by date range, status and restaurant", async () => {
    expect(await ids("bookings", { from: "2026-11-21", to: "2026-11-23" })).toEqual(["bk_2", "bk_3"]);
    expect(await ids("bookings", { status: "CANCELLED" })).toEqual(["bk_2"]);
    expect(await ids("bookings", { restaurantId: "rest_2" })).toEqual(["bk_3"]);
    expect(await ids("menu-items", { restaurantId: "rest_1" })).toEqual(["mi_1"]);
  });

  it("refuses a filter it cannot apply with a MirrorFilterError naming the field", async () => {
    const cases: [MirrorKind, MirrorListFilter, string][] = [
      ["orders", { status: "PAID" }, "status"],
      ["orders", { from: "yesterday" }, "from"],
      ["orders", { to: "2026-11-20T10:00:00" }, "to"],
      ["orders", { limit: 0 }, "limit"],
      ["orders", { limit: 101 }, "limit"],
      ["orders", { cursor: "not-a-cursor" }, "cursor"],
      ["bookings", { from: "2026-11-20T00:00:00Z" }, "from"],
      ["bookings", { status: "cancelled" }, "status"],
      ["menu-items", { status: "CONFIRMED" }, "status"],
      ["reviews", { from: "2026-11-20" }, "from"],
      ["orders", { restaurantId: "" }, "restaurantId"],
    ];
    for (const [kind, filter, field] of cases) {
      const error = await mirror.list(kind, filter).catch((e: unknown) => e);
      expect(error, `${kind} ${JSON.stringify(filter)}`).toBeInstanceOf(MirrorFilterError);
      expect((error as MirrorFilterError).field).toBe(field);
    }
  });

  it("reads URL query parameters, refusing unknown ones and non-numeric limits", () => {
    expect(filterFromQuery({ restaurantId: "rest_1", limit: "20", cursor: undefined })).toEqual({ restaurantId: "rest_1", limit: 20 });
    expect(() => filterFromQuery({ restaurant: "rest_1" })).toThrow(MirrorFilterError);
    expect(() => filterFromQuery({ limit: "ten" })).toThrow(/limit/);
  });
});
