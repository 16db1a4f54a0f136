import { SpanKind, type Span, type Tracer } from "@opentelemetry/api";
import { DEFAULTS } from "../config/defaults.js";
import { formatTraceparent } from "../tracing/traceparent.js";
import { inSpan } from "../tracing/in-span.js";
import type { Logger } from "pino";
import type * as z from "zod";
import { parseApiKey } from "./api-key.js";
import {
  UpstreamError,
  UpstreamNetworkError,
  UpstreamPageRefusedError,
  UpstreamRateLimitError,
  UpstreamRequestError,
  UpstreamResponseError,
  UpstreamTimeoutError,
} from "./errors.js";
import {
  bookingSchema,
  menuItemSchema,
  orderSchema,
  looseRecordsPageSchema,
  splitRecords,
  type Booking,
  type CreateBookingInput,
  type MenuItem,
  type Order,
  type SettableOrderStatus,
} from "./models.js";
import type { BookingQuery, ListOptions, MenuItemQuery, OrderQuery, ReadPage } from "./list-queries.js";
import type { BudgetClass, RateLimiter } from "./rate-limiter.js";
import { paginate } from "./paginate.js";
import { readAnswer } from "./read-answer.js";
import { backoffMs } from "./retry.js";
import { sleep } from "./sleep.js";

export interface ApiClientOptions {
  baseUrl: string;
  apiKey: string;
  /** The shared budget; without one, nothing limits this client's rate. */
  limiter?: RateLimiter;
  timeoutMs?: number;
  /**
   * The most bytes a success answer (a list page) may have: one over it is refused
   * (`page_too_large`) without being read whole. @defaultValue DEFAULTS.apiMaxPageBytes (4 MiB)
   */
  maxPageBytes?: number;
  /** Retries of a GET after a network error, timeout or 5xx. Writes are never re-sent after those. */
  readRetries?: number;
  retryBaseMs?: number;
  /** 429s waited out (shared pause) and retried before UpstreamRateLimitError is thrown. */
  maxRateLimitRetries?: number;
  userAgent?: string;
  onResponse?: (info: {
    method: string;
    route: string;
    status: number | "timeout" | "network";
    durationMs: number;
    /** The budget class the call was sent under. */
    budget: BudgetClass;
  }) => void;
  logger?: Logger;
  /**
   * Given only when tracing is on: each call is a CLIENT span (its budget waits and retries as
   * events) and every request sends the span's W3C `traceparent`.
   */
  tracer?: Tracer;
  /**
   * The query parameter the bookings list reads as its upper date bound (`BookingQuery.to`): the
   * spec does not show its name. @defaultValue "to" (the sandbox's)
   */
  bookingsUpperBoundParam?: string;
}

export interface ApiClient {
  listOrders(query?: OrderQuery, opts?: ListOptions): Promise<ReadPage<Order>>;
  iterateOrders(query?: Omit<OrderQuery, "cursor">, opts?: ListOptions): AsyncIterable<Order>;
  listBookings(query?: BookingQuery, opts?: ListOptions): Promise<ReadPage<Booking>>;
  iterateBookings(query?: Omit<BookingQuery, "cursor">, opts?: ListOptions): AsyncIterable<Booking>;
  listMenuItems(query?: MenuItemQuery, opts?: ListOptions): Promise<ReadPage<MenuItem>>;
  iterateMenuItems(query?: Omit<MenuItemQuery, "cursor">, opts?: ListOptions): AsyncIterable<MenuItem>;
  updateOrderStatus(id: string, status: SettableOrderStatus): Promise<Order>;
  refundOrder(id: string, reason?: string): Promise<Order>;
  createBooking(input: CreateBookingInput): Promise<Booking>;
}

interface Call<T> {
  method: "GET" | "POST" | "PATCH";
  path: string;
  /** A low-cardinality name for metrics ("/api/v1/orders/{id}/status"). */
  route: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  schema: z.ZodType<T>;
  priority?: BudgetClass;
  clock?: () => Promise<Date>;
}

export type { BookingQuery, ListOptions, MenuItemQuery, OrderQuery, ReadPage } from "./list-queries.js";

/** The spec's page size bound (part 8): also what a page without `limit` may hold at most. */
const MAX_LIMIT = 100;

/** The typed client of the upstream API (spec part 4, decisions in docs/upstream.md). */
export function createApiClient(options: ApiClientOptions): ApiClient {
  const apiKey = parseApiKey(options.apiKey);
  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  const timeoutMs = options.timeoutMs ?? DEFAULTS.apiTimeoutMs;
  const maxPageBytes = options.maxPageBytes ?? DEFAULTS.apiMaxPageBytes;
  const readRetries = options.readRetries ?? 3;
  const retryBaseMs = options.retryBaseMs ?? 200;
  const maxRateLimitRetries = options.maxRateLimitRetries ?? 5;
  const headers = {
    authorization: `Bearer ${apiKey}`,
    accept: "application/json",
    "user-agent": options.userAgent ?? "svc-webhooks",
  };

  /** The answer, and when the attempt that got it was sent (see ReadPage). */
  function send<T>(call: Call<T>): Promise<{ value: T; sentAt: Date }> {
    const { tracer } = options;
    if (!tracer) return sendWithRetries(call);
    return inSpan(
      tracer,
      `${call.method} ${call.route}`,
      { kind: SpanKind.CLIENT, attributes: { "http.request.method": call.method, "url.template": call.route } },
      (span) => sendWithRetries(call, span),
    );
  }

  async function sendWithRetries<T>(call: Call<T>, span?: Span): Promise<{ value: T; sentAt: Date }> {
    const url = new URL(baseUrl + call.path);
    for (const [k, v] of Object.entries(call.query ?? {})) if (v !== undefined && v !== "") url.searchParams.set(k, String(v));
    let failures = 0;
    let rateLimited = 0;
    for (;;) {
      const waitStarted = span ? performance.now() : 0;
      await options.limiter?.acquire({ priority: call.priority ?? "webhook" });
      span?.addEvent("rate budget acquired", { "svc.budget.wait_ms": Math.round(performance.now() - waitStarted) });
      try {
        // Per attempt, after the slot: the time of the request actually sent, not of the first try.
        const sentAt = call.clock ? await call.clock() : new Date();
        return { value: await sendAttempt(call, url, span), sentAt };
      } catch (err) {
        if (err instanceof UpstreamRateLimitError) {
          span?.addEvent("rate limited", { "svc.retry_after_ms": err.retryAfterMs });
          // Nobody sharing the key sends until Retry-After has passed; a 429 was not processed,
          // so even a write is safe to send again.
          await options.limiter?.pause(err.retryAfterMs);
          if (++rateLimited > maxRateLimitRetries) throw err;
          if (!options.limiter) await sleep(err.retryAfterMs);
          continue;
        }
        const retryable = call.method === "GET" && err instanceof UpstreamError && err.retryable;
        if (!retryable || ++failures > readRetries) throw err;
        span?.addEvent("retry", { "svc.retry.reason": (err as Error).message });
        await sleep(backoffMs(failures - 1, retryBaseMs));
      }
    }
  }

  async function sendAttempt<T>(call: Call<T>, url: URL, span?: Span): Promise<T> {
    const started = performance.now();
    const report = (status: number | "timeout" | "network") =>
      options.onResponse?.({
        method: call.method,
        route: call.route,
        status,
        durationMs: performance.now() - started,
        budget: call.priority ?? "webhook",
      });
    // The timeout covers the whole answer, body included: a body that stalls after the headers
    // is a timeout like any other (retried for a GET), never a raw DOMException.
    let res: Response | undefined;
    let json: unknown;
    // The API sees the call's trace context (W3C), so its own traces can join ours.
    const traceparent = span ? formatTraceparent(span.spanContext()) : undefined;
    const sent = traceparent === undefined ? headers : { ...headers, traceparent };
    const context = `${call.method} ${call.route}`;
    try {
      res = await fetch(url, {
        method: call.method,
        headers: call.body === undefined ? sent : { ...sent, "content-type": "application/json" },
        ...(call.body === undefined ? {} : { body: JSON.stringify(call.body) }),
        signal: AbortSignal.timeout(timeoutMs),
      });
      json = await readAnswer(res, { maxBytes: maxPageBytes, context });
    } catch (err) {
      if (res && err instanceof UpstreamError) {
        report(res.status);
        span?.setAttribute("http.response.status_code", res.status);
        throw err;
      }
      const timedOut = (err as Error).name === "TimeoutError";
      report(timedOut ? "timeout" : "network");
      if (timedOut) throw new UpstreamTimeoutError(`${context} timed out after ${timeoutMs} ms`);
      throw new UpstreamNetworkError(`${context} failed: ${(err as Error).message}`, err);
    }
    report(res.status);
    span?.setAttribute("http.response.status_code", res.status);
    const parsed = call.schema.safeParse(json);
    if (!parsed.success) {
      const detail = parsed.error.issues
        .slice(0, 3)
        .map((i) => `${i.path.join(".")}: ${i.message}`)
        .join("; ");
      throw new UpstreamResponseError(`${context} answered an unexpected shape: ${detail}`, { status: res.status });
    }
    return parsed.data;
  }

  const sendValue = async <T>(call: Call<T>): Promise<T> => (await send(call)).value;

  const checkLimit = (limit: number | undefined) => {
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)) {
      throw new UpstreamRequestError(`limit must be a whole number from 1 to ${MAX_LIMIT}, not ${limit}`);
    }
  };

  function lister<T, Q extends { limit?: number; cursor?: string }>(
    path: string,
    schema: z.ZodType<T>,
    toParams: (query: Q) => Record<string, string | number | undefined> = (query) => query,
  ) {
    const list = async (query: Q = {} as Q, opts: ListOptions = {}): Promise<ReadPage<T>> => {
      checkLimit(query.limit);
      const pages = looseRecordsPageSchema;
      const { value, sentAt } = await send({
        method: "GET",
        path,
        route: path,
        query: toParams(query),
        schema: pages,
        priority: opts.priority,
        clock: opts.clock,
      });
      // More than asked for is not a page of this list (and memory sized for `limit` records).
      const asked = query.limit ?? MAX_LIMIT;
      if (value.data.length > asked)
        throw new UpstreamPageRefusedError(`GET ${path} answered ${value.data.length} records for limit ${asked}: refused the page`, {
          code: "page_over_limit",
        });
      // Each record on its own: one the spec's shape does not fit is set aside, not the whole page.
      return { ...splitRecords(schema, value.data), nextCursor: value.nextCursor, readAt: sentAt };
    };
    const iterate = (query: Omit<Q, "cursor"> = {} as Q, opts: ListOptions = {}) =>
      paginate((cursor) => list({ ...query, ...(cursor ? { cursor } : {}) } as Q, opts));
    return { list, iterate };
  }

  const orders = lister<Order, OrderQuery>("/api/v1/orders", orderSchema);
  const upperBound = options.bookingsUpperBoundParam ?? "to";
  const bookings = lister<Booking, BookingQuery>("/api/v1/bookings", bookingSchema, ({ to, ...rest }) =>
    to === undefined ? rest : { ...rest, [upperBound]: to },
  );
  const menuItems = lister<MenuItem, MenuItemQuery>("/api/v1/menu-items", menuItemSchema);

  return {
    listOrders: orders.list,
    iterateOrders: orders.iterate,
    listBookings: bookings.list,
    iterateBookings: bookings.iterate,
    listMenuItems: menuItems.list,
    iterateMenuItems: menuItems.iterate,
    updateOrderStatus: (id, status) =>
      sendValue({
        method: "PATCH",
        path: `/api/v1/orders/${encodeURIComponent(id)}/status`,
        route: "/api/v1/orders/{id}/status",
        body: { status },
        schema: orderSchema,
      }),
    refundOrder: (id, reason) =>
      sendValue({
        method: "POST",
        path: `/api/v1/orders/${encodeURIComponent(id)}/refund`,
        route: "/api/v1/orders/{id}/refund",
        body: reason === undefined ? {} : { reason },
        schema: orderSchema,
      }),
    createBooking: (input) =>
      sendValue({ method: "POST", path: "/api/v1/bookings", route: "/api/v1/bookings", body: input, schema: bookingSchema }),
  };
}
