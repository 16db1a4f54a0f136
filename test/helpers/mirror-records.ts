/** Records in the API's shape (as the sandbox serves them), for the mirror suites. */
import type { MirrorRecord } from "../../src/mirror/mirror-store.js";
export const orderRecord = (id: string, extra: Record<string, unknown> = {}): MirrorRecord => ({
  id,
  restaurantId: "rest_1",
  bookingId: null,
  type: "DINE_IN",
  status: "PENDING",
  subtotal: 20.5,
  tax: 1.64,
  tip: 0,
  total: 22.14,
  currency: "EUR",
  paidAt: null,
  refundedAt: null,
  createdAt: "2026-11-20T10:00:00.000Z",
  items: [
    { id: `${id}_i1`, menuItemId: "mi_1", name: "Soup", quantity: 1, price: 8.5, notes: null },
    { id: `${id}_i2`, menuItemId: "mi_2", name: "Bread", quantity: 2, price: 6, notes: "warm" },
  ],
  ...extra,
});

export const bookingRecord = (id: string, extra: Record<string, unknown> = {}): MirrorRecord => ({
  id,
  restaurantId: "rest_1",
  date: "2026-11-21",
  time: "19:30",
  partySize: 4,
  status: "CONFIRMED",
  confirmCode: "ABC123",
  diner: { name: "Ada", email: "ada@example.com" },
  createdAt: "2026-11-20T09:00:00.000Z",
  ...extra,
});

export const menuItemRecord = (id: string, extra: Record<string, unknown> = {}): MirrorRecord => ({
  id,
  restaurantId: "rest_1",
  name: "Soup",
  description: "Of the day",
  price: 8.5,
  currency: "EUR",
  allergens: ["celery"],
  tags: ["vegan"],
  stock: null,
  updatedAt: "2026-11-20T08:00:00.000Z",
  ...extra,
});

export const reviewRecord = (id: string, extra: Record<string, unknown> = {}): MirrorRecord => ({
  id,
  restaurantId: "rest_1",
  rating: 5,
  comment: null,
  author: "Ada",
  createdAt: "2026-11-20T11:00:00.000Z",
  ...extra,
});

/** `base` moved on by `ms` milliseconds: distinct read instants without waiting for a clock. */
export const later = (base: Date, ms: number) => new Date(base.getTime() + ms);
