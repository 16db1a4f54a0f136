import { UnrecoverableError } from "bullmq";
import type { ApiClient } from "../upstream/client.js";

/**
 * A handler called `ctx.api` on a service with no upstream configured. No retry can fix that, so
 * it fails the event for good (a dead letter to replay once the API is configured).
 */
export class ApiNotConfiguredError extends UnrecoverableError {
  readonly code = "api_not_configured";
  constructor(method: string) {
    super(`ctx.api.${method}: this service has no upstream API (set API_BASE_URL and API_KEY)`);
    this.name = "ApiNotConfiguredError";
  }
}

/** The `ctx.api` of a service without an upstream: every call fails with ApiNotConfiguredError. */
export function apiNotConfigured(): ApiClient {
  const refuse = (method: string) => () => Promise.reject(new ApiNotConfiguredError(method));
  const refuseToIterate = (method: string) => () => ({
    [Symbol.asyncIterator]: () => ({ next: () => Promise.reject<IteratorResult<never>>(new ApiNotConfiguredError(method)) }),
  });
  return {
    listOrders: refuse("listOrders"),
    listBookings: refuse("listBookings"),
    listMenuItems: refuse("listMenuItems"),
    iterateOrders: refuseToIterate("iterateOrders"),
    iterateBookings: refuseToIterate("iterateBookings"),
    iterateMenuItems: refuseToIterate("iterateMenuItems"),
    updateOrderStatus: refuse("updateOrderStatus"),
    refundOrder: refuse("refundOrder"),
    createBooking: refuse("createBooking"),
  };
}
