import type { Tracer } from "@opentelemetry/api";
import type { Logger } from "pino";
import { DEFAULTS } from "../config/defaults.js";
import type { ApiCall, ApiResponseInfo } from "./api-call.js";
import { parseApiKey } from "./api-key.js";
import type { BookingQuery, ListOptions, MenuItemQuery, OrderQuery, ReadPage } from "./list-queries.js";
import { listReader } from "./list-reader.js";
import {
  bookingSchema,
  menuItemSchema,
  orderSchema,
  type Booking,
  type CreateBookingInput,
  type MenuItem,
  type Order,
  type SettableOrderStatus,
} from "./models.js";
import type { RateLimiter } from "./rate-limiter.js";
import { sendCall, type SendSettings } from "./send-call.js";

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
  onResponse?: (info: ApiResponseInfo) => void;
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
  /**
   * Aborts every call in flight, wherever it waits (the budget, a backoff, the answer), and every
   * call after: the worker's shutdown deadline. A call's own `ListOptions.signal` aborts it too.
   */
  signal?: AbortSignal;
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

export type { BookingQuery, ListOptions, MenuItemQuery, OrderQuery, ReadPage } from "./list-queries.js";

/** The typed client of the upstream API (spec part 4, decisions in docs/upstream.md). */
export function createApiClient(options: ApiClientOptions): ApiClient {
  const settings: SendSettings = {
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    headers: {
      authorization: `Bearer ${parseApiKey(options.apiKey)}`,
      accept: "application/json",
      "user-agent": options.userAgent ?? "svc-webhooks",
    },
    timeoutMs: options.timeoutMs ?? DEFAULTS.apiTimeoutMs,
    maxPageBytes: options.maxPageBytes ?? DEFAULTS.apiMaxPageBytes,
    readRetries: options.readRetries ?? 3,
    retryBaseMs: options.retryBaseMs ?? 200,
    maxRateLimitRetries: options.maxRateLimitRetries ?? 5,
    limiter: options.limiter,
    onResponse: options.onResponse,
    tracer: options.tracer,
    signal: options.signal,
  };
  const send = <T>(call: ApiCall<T>) => sendCall(settings, call);
  const sendValue = async <T>(call: ApiCall<T>): Promise<T> => (await send(call)).value;

  const orders = listReader<Order, OrderQuery>(send, "/api/v1/orders", orderSchema);
  const upperBound = options.bookingsUpperBoundParam ?? "to";
  const bookings = listReader<Booking, BookingQuery>(send, "/api/v1/bookings", bookingSchema, ({ to, ...rest }) =>
    to === undefined ? rest : { ...rest, [upperBound]: to },
  );
  const menuItems = listReader<MenuItem, MenuItemQuery>(send, "/api/v1/menu-items", menuItemSchema);

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
