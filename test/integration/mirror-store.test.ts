import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { createRedisMirror } from "../../src/mirror/redis-store.js";
import type { RedisMirrorStore as MirrorStore } from "../../src/mirror/redis-store.js";

let redis: Redis;
let mirror: MirrorStore;
beforeEach(() => {
  redis = new Redis(inject("redisUrl"));
  mirror = createRedisMirror(redis, `test-${randomUUID().slice(0, 8)}`);
});
afterEach(async () => {
  await redis.quit();
});

const order = (status: string, extra: Record<string, unknown> = {}) => ({ id: "ord_1", restaurantId: "rest_1", status, ...extra });

describe("Redis mirror", () => {
  it("stores, reads back and lists by restaurant", async () => {
    await mirror.upsert("orders", [order("PENDING"), { id: "ord_2", restaurantId: "rest_2", status: "READY" }], 1);
    expect(await mirror.get("orders", "ord_1")).toEqual(order("PENDING"));
    expect((await mirror.list("orders", "rest_2")).map((o) => o.id)).toEqual(["ord_2"]);
    expect(await mirror.get("orders", "nope")).toBeUndefined();
    expect(await mirror.lastWriteAt("orders")).toBeTypeOf("number");
  });

  it("webhook with older snapshot does not override newer data", async () => {
    await mirror.upsert("orders", [order("READY", { tip: 2 })], 2000);
    const result = await mirror.upsert("orders", [order("READY", { tip: 1 })], 1000);
    expect(result).toEqual({ written: 0, skipped: 1 });
    expect(await mirror.get("orders", "ord_1")).toMatchObject({ tip: 2 });
  });

  it("never moves an order's status backwards, even from a later read", async () => {
    await mirror.upsert("orders", [order("DELIVERED")], 1000);
    await mirror.upsert("orders", [order("PREPARING")], 2000);
    expect(await mirror.get("orders", "ord_1")).toMatchObject({ status: "DELIVERED" });
    await mirror.upsert("orders", [order("REFUNDED")], 1500);
    expect(await mirror.get("orders", "ord_1")).toMatchObject({ status: "REFUNDED" });
  });

  it("never un-cancels a booking", async () => {
    const booking = (status: string) => ({ id: "bk_1", restaurantId: "rest_1", status });
    await mirror.upsert("bookings", [booking("CANCELLED")], 1000);
    await mirror.upsert("bookings", [booking("CONFIRMED")], 2000);
    expect(await mirror.get("bookings", "bk_1")).toMatchObject({ status: "CANCELLED" });
  });

  it("takes a same-rank newer read", async () => {
    await mirror.upsert("menu-items", [{ id: "mi_1", restaurantId: "r", price: 1 }], 1000);
    await mirror.upsert("menu-items", [{ id: "mi_1", restaurantId: "r", price: 2 }], 1000);
    expect(await mirror.get("menu-items", "mi_1")).toMatchObject({ price: 2 });
  });
});
