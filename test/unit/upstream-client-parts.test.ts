import { describe, expect, it } from "vitest";
import { parseApiKey } from "../../src/upstream/client.js";
import { apiKeyId } from "../../src/base/api-key.js";
import {
  errorFromResponse,
  isPermanentUpstreamError,
  UpstreamAuthError,
  UpstreamConflictError,
  UpstreamRateLimitError,
  UpstreamServerError,
  UpstreamTimeoutError,
} from "../../src/upstream/errors.js";
import { orderSchema } from "../../src/upstream/models.js";
import { paginate, paginatePages } from "../../src/upstream/paginate.js";
import { backoffMs } from "../../src/base/backoff.js";
import { parseRetryAfter } from "../../src/upstream/client.js";

describe("Retry-After and backoff", () => {
  it("reads delta-seconds and HTTP dates, and falls back on garbage", () => {
    const now = Date.parse("2026-11-22T10:00:00Z");
    expect(parseRetryAfter("7", { now })).toBe(7000);
    expect(parseRetryAfter("Sun, 22 Nov 2026 10:00:30 GMT", { now })).toBe(30_000);
    expect(parseRetryAfter("Sun, 22 Nov 2026 09:00:00 GMT", { now })).toBe(0);
    expect(parseRetryAfter("soon", { now })).toBe(1000);
    expect(parseRetryAfter(null, { now, fallbackMs: 2500 })).toBe(2500);
  });

  it("reads the obsolete date forms as UTC, refuses what only Date.parse would take, and caps", () => {
    const now = Date.parse("2026-11-22T10:00:00Z");
    expect(parseRetryAfter("Sunday, 22-Nov-26 10:00:05 GMT", { now })).toBe(5000);
    expect(parseRetryAfter("Sun Nov 22 10:00:09 2026", { now })).toBe(9000);
    expect(parseRetryAfter("-5", { now })).toBe(1000);
    expect(parseRetryAfter("86400", { now, maxMs: 60_000 })).toBe(60_000);
  });

  it("keeps full-jitter backoff within [0, base·2^n] and under the cap", () => {
    expect(backoffMs(3, 100, 30_000, () => 0.999)).toBe(799);
    expect(backoffMs(3, 100, 30_000, () => 0)).toBe(0);
    expect(backoffMs(20, 100, 5000, () => 0.5)).toBe(2500);
  });
});

describe("API key", () => {
  it("accepts svc_live_ keys and refuses others without echoing them", () => {
    expect(parseApiKey("svc_live_abc")).toBe("svc_live_abc");
    for (const bad of ["sk_test_hunter2", "svc_live_", "svc_live_hunter 2"]) {
      expect(() => parseApiKey(bad)).toThrow(/svc_live_/);
      try {
        parseApiKey(bad);
      } catch (err) {
        expect((err as Error).message).not.toContain("hunter");
      }
    }
  });

  it("derives a stable 16-hex id that is not the key", () => {
    expect(apiKeyId("svc_live_abc")).toMatch(/^[0-9a-f]{16}$/);
    expect(apiKeyId("svc_live_abc")).toBe(apiKeyId("svc_live_abc"));
  });
});

describe("models and errors", () => {
  const order = {
    id: "ord_1",
    restaurantId: "r",
    bookingId: null,
    type: "DELIVERY",
    status: "READY",
    subtotal: 1,
    tax: 0.1,
    tip: 0,
    total: 1.1,
    currency: "EUR",
    paidAt: null,
    refundedAt: null,
    createdAt: "2026-11-22T10:00:00Z",
    items: [],
  };

  it("keeps fields the spec does not show", () => {
    expect(orderSchema.parse({ ...order, loyaltyPoints: 12 })).toMatchObject({ loyaltyPoints: 12 });
  });

  it("refuses wrong types on the fields it shows", () => {
    expect(orderSchema.safeParse({ ...order, total: "1.10" }).success).toBe(false);
    expect(orderSchema.safeParse({ ...order, status: "SHIPPED" }).success).toBe(false);
  });

  it("calls 4xx other than 429 permanent", () => {
    expect(isPermanentUpstreamError(new UpstreamConflictError("x", { code: "invalid_transition" }))).toBe(true);
    expect(isPermanentUpstreamError(new UpstreamRateLimitError("x", { retryAfterMs: 1000 }))).toBe(false);
    expect(isPermanentUpstreamError(new UpstreamServerError("x", { status: 503 }))).toBe(false);
    expect(isPermanentUpstreamError(new UpstreamTimeoutError("x"))).toBe(false);
  });
});

describe("error answers and pagination", () => {
  it("types an error answer by status and keeps the documented code and message", () => {
    const err = errorFromResponse({
      status: 409,
      body: '{"error":{"code":"not_refundable","message":"unpaid"}}',
      retryAfterMs: 0,
      context: "POST /r",
    });
    expect(err).toBeInstanceOf(UpstreamConflictError);
    expect(err).toMatchObject({ status: 409, code: "not_refundable", message: "POST /r answered 409: unpaid", retryable: false });
    const proxy = errorFromResponse({ status: 403, body: "<html>nope</html>", retryAfterMs: 0, context: "GET /r" });
    expect(proxy).toBeInstanceOf(UpstreamAuthError);
    expect(proxy.code).toBe("http_403");
    expect(errorFromResponse({ status: 429, body: "", retryAfterMs: 4000, context: "GET /r" })).toMatchObject({
      constructor: UpstreamRateLimitError,
      retryAfterMs: 4000,
    });
  });

  it("walks pages in order and refuses a cursor handed back unchanged", async () => {
    const pages: Record<string, { data: number[]; nextCursor: string | null }> = {
      start: { data: [1, 2], nextCursor: "b" },
      b: { data: [3], nextCursor: null },
    };
    const seen: number[] = [];
    for await (const n of paginate((c) => Promise.resolve(pages[c ?? "start"]!))) seen.push(n);
    expect(seen).toEqual([1, 2, 3]);
    const stuck = paginate(() => Promise.resolve({ data: [1], nextCursor: "same" }), "same");
    await expect(
      (async () => {
        for await (const _ of stuck);
      })(),
    ).rejects.toMatchObject({ code: "repeated_cursor" });
  });

  it("refuses a cursor that comes back after others (a cycle), after yielding the page that named it", async () => {
    const cycle: Record<string, { data: string[]; nextCursor: string | null }> = {
      start: { data: ["p1"], nextCursor: "a" },
      a: { data: ["p2"], nextCursor: "b" },
      b: { data: ["p3"], nextCursor: "a" },
    };
    const seen: string[] = [];
    const walk = (async () => {
      for await (const page of paginatePages((c) => Promise.resolve(cycle[c ?? "start"]!))) seen.push(...page.data);
    })();
    await expect(walk).rejects.toThrow(/same cursor again after 3 page/);
    expect(seen).toEqual(["p1", "p2", "p3"]);
  });

  it("refuses a cycle of 10,001 cursors, longer than any fixed memory of cursors, when its first comes back", async () => {
    let pages = 0;
    const walk = (async () => {
      for await (const _ of paginatePages((c) => {
        const at = c === undefined ? -1 : Number(c);
        return Promise.resolve({ data: [], nextCursor: String((at + 1) % 10_001) });
      }))
        if (++pages > 30_000) throw new Error(`walked ${pages} pages and went on`);
    })();
    await expect(walk).rejects.toMatchObject({ code: "repeated_cursor" });
    expect(pages).toBe(10_002);
  });
});
