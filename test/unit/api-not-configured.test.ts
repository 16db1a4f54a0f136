import { UnrecoverableError } from "bullmq";
import { describe, expect, it } from "vitest";
import { ApiNotConfiguredError } from "../../src/worker/errors.js";
import { apiNotConfigured } from "../../src/worker/upstream.js";

describe("ctx.api on a service with no upstream", () => {
  const api = apiNotConfigured();

  it("fails every call with ApiNotConfiguredError naming it, a permanent failure", async () => {
    const calls = {
      listOrders: () => api.listOrders(),
      listBookings: () => api.listBookings(),
      listMenuItems: () => api.listMenuItems(),
      updateOrderStatus: () => api.updateOrderStatus("ord_1", "READY"),
      refundOrder: () => api.refundOrder("ord_1"),
      createBooking: () =>
        api.createBooking({
          restaurantId: "rest_1",
          date: "2026-12-24",
          time: "19:30",
          partySize: 2,
          diner: { name: "Ada", email: "a@b.c" },
        }),
    };
    for (const [method, call] of Object.entries(calls)) {
      const err: unknown = await call().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiNotConfiguredError);
      expect(err).toBeInstanceOf(UnrecoverableError);
      expect((err as ApiNotConfiguredError).code).toBe("api_not_configured");
      expect((err as ApiNotConfiguredError).message).toBe(
        `ctx.api.${method}: this service has no upstream API (set API_BASE_URL and API_KEY)`,
      );
    }
  });

  it("fails an iteration on its first step", async () => {
    for (const [method, iterate] of [
      ["iterateOrders", () => api.iterateOrders()],
      ["iterateBookings", () => api.iterateBookings()],
      ["iterateMenuItems", () => api.iterateMenuItems()],
    ] as const) {
      const read = async () => {
        for await (const record of iterate()) return record;
      };
      await expect(read()).rejects.toThrow(`ctx.api.${method}: this service has no upstream API (set API_BASE_URL and API_KEY)`);
    }
  });
});
