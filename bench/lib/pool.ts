import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { signPayload } from "../../src/events/envelope.js";

export const BENCH_SECRET = "whsec_bench_0123456789abcdef";

/**
 * Unique events written per second of a measured run: above what any durable server here
 * accepts, so no run sends an event twice (a repeat is a cheap duplicate and would inflate it).
 */
export const POOL_EVENTS_PER_SECOND = 30_000;

/** Throws when a run sent more requests than its pool holds: some were repeats. */
export function assertPoolNotWrapped(sent: number, poolSize: number, server: string): void {
  if (sent > poolSize) {
    throw new Error(`${server} was sent ${sent} requests from a pool of ${poolSize} unique events: raise POOL_EVENTS_PER_SECOND`);
  }
}

/** A signed order event of about 1 KB, unique by id. */
export function benchEvent(n: number, tag: string): string {
  return JSON.stringify({
    id: `evt_${tag}_${n}_${randomUUID()}`,
    type: "order.status_changed",
    createdAt: new Date().toISOString(),
    data: {
      id: `ord_${n}`,
      restaurantId: `rest_${n % 7}`,
      status: "PREPARING",
      type: "DELIVERY",
      subtotal: 42.5,
      tax: 4.25,
      tip: 5,
      total: 51.75,
      currency: "EUR",
      paidAt: "2026-11-22T12:00:00.000Z",
      refundedAt: null,
      bookingId: null,
      createdAt: "2026-11-22T11:58:00.000Z",
      items: Array.from({ length: 4 }, (_, i) => ({
        id: `oi_${n}_${i}`,
        menuItemId: `mi_${i}`,
        name: `Dish number ${i} with a longer name`,
        quantity: 1 + (i % 3),
        price: 9.5 + i,
        notes: i % 2 ? "no onions, extra sauce please" : null,
      })),
    },
  });
}

/**
 * Writes `count` fully formatted HTTP requests, NUL-separated, for bench/lib/pool.lua: wrk then
 * sends unique signed events without computing an HMAC per request itself.
 */
export function writeRequestPool(file: string, count: number, tag: string): void {
  const parts: string[] = [];
  for (let i = 0; i < count; i++) {
    const body = benchEvent(i, tag);
    parts.push(
      `POST /webhooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-SVC-Signature: ${signPayload(body, BENCH_SECRET)}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}\0`,
    );
  }
  writeFileSync(file, parts.join(""));
}
