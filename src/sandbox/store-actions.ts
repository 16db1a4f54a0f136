import { buildBooking, buildOrder, buildReview } from "./build-records.js";
import { money } from "./money.js";
import { checkRefund, checkStatusMove } from "./state-machine.js";
import type { StoreState } from "./store-state.js";
import { SandboxError, type Booking, type MenuItem, type Order, type Review } from "./types.js";

export type EmitEvent = (type: string, resource: { id: string; restaurantId: string }) => void;

/**
 * Every change the API (or the simulation) can make, each emitting the webhook event the real
 * service would send. `willChange` sees a record just before a change to it.
 */
export function createActions(state: StoreState, emit: EmitEvent, willChange: (record: { id: string }) => void) {
  const { orders, bookings, menuItems } = state;
  return {
    createOrder(input: Parameters<typeof buildOrder>[1] = {}): Order {
      const order = buildOrder(state, input);
      state.putOrder(order);
      emit("order.created", order);
      return order;
    },
    updateOrderStatus(id: string, status: string): Order {
      const order = state.find(orders, id, "order");
      const next = checkStatusMove(order.status, status);
      willChange(order);
      order.status = next;
      state.putOrder(order);
      emit("order.status_changed", order);
      return order;
    },
    refundOrder(id: string, reason?: unknown): Order {
      if (reason !== undefined && (typeof reason !== "string" || reason.length > 500)) {
        throw new SandboxError(400, "invalid_request", "reason must be a string of at most 500 characters");
      }
      const order = state.find(orders, id, "order");
      checkRefund(order);
      willChange(order);
      order.status = "REFUNDED";
      order.refundedAt = state.stamp();
      state.putOrder(order);
      emit("order.refunded", order);
      return order;
    },
    createBooking(input: Parameters<typeof buildBooking>[1]): Booking {
      const booking = buildBooking(state, input);
      state.putBooking(booking);
      emit("booking.created", booking);
      return booking;
    },
    cancelBooking(id: string): Booking {
      const booking = state.find(bookings, id, "booking");
      if (booking.status === "CANCELLED") throw new SandboxError(409, "invalid_transition", "booking is already cancelled");
      willChange(booking);
      booking.status = "CANCELLED";
      state.putBooking(booking);
      emit("booking.status_changed", booking);
      return booking;
    },
    createReview(input: Parameters<typeof buildReview>[1] = {}): Review {
      const review = buildReview(state, input);
      state.putReview(review);
      emit("review.created", review);
      return review;
    },
    updateMenuItem(id: string, patch: { price?: number; description?: string; stock?: number | null }): MenuItem {
      const item = state.find(menuItems, id, "menu item");
      willChange(item);
      if (patch.price !== undefined) item.price = money(patch.price);
      if (patch.description !== undefined) item.description = patch.description;
      if (patch.stock !== undefined) item.stock = patch.stock;
      item.updatedAt = state.stamp();
      state.putMenuItem(item);
      emit("menu_item.updated", item);
      return item;
    },
  };
}
