import { SpanKind, type Span, type Tracer } from "@opentelemetry/api";
import { apiKeyProblem } from "../base/api-key.js";
import type { Logger } from "pino";
import type * as z from "zod";
import { DEFAULTS } from "../config/defaults.js";
import { formatTraceparent, inSpan } from "../tracing/tracing.js";
import {
  ApiKeyError,
  errorFromResponse,
  UpstreamAbortedError,
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
  looseRecordsPageSchema,
  MAX_LIMIT,
  menuItemSchema,
  orderSchema,
  splitRecords,
  type Booking,
  type CreateBookingInput,
  type MenuItem,
  type Order,
  type Page,
  type RefusedRecord,
  type SettableOrderStatus,
} from "./models.js";
import { paginate } from "./paginate.js";
import { DEFAULT_BUDGET_CLASS, type BudgetClass, type RateLimiter } from "./rate-limiter.js";
import { backoffMs } from "../base/backoff.js";
import { sleep } from "../base/deadline.js";

// The typed client of the upstream API: its key, its calls (the six endpoints as lists and
// writes), how each call is sent (budget slot, timeout, bounded read of the answer, retries) and
// the timing rules of its retries.

// ---- The API key (its form: base/api-key.ts)

/** Checks the key's form and returns it unchanged; ApiKeyError (never naming the key) otherwise. */
export function parseApiKey(key: string): string {
  const problem = apiKeyProblem(key);
  if (problem !== undefined) throw new ApiKeyError(problem);
  return key;
}

// ---- The client and its calls

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
  /**
   * Told how each attempt of a call ended, and whether the client tries again (problems/ reads
   * these as facts: an API that does not answer, a key it refuses). Not told of an aborted call.
   */
  onOutcome?: (outcome: ApiCallOutcome) => void;
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

/** The typed client of the upstream API (spec part 4, decisions in docs/upstream.md). */
export function createApiClient(options: ApiClientOptions): ApiClient {
  const settings = sendSettings(options);
  const send = <T>(call: ApiCall<T>) => sendCall(settings, call);
  const sendValue = async <T>(call: ApiCall<T>): Promise<T> => (await send(call)).value;
  /** A write to one order (`/api/v1/orders/{id}/<action>`), answered with the order. */
  const orderWrite = (method: "PATCH" | "POST", id: string, action: "status" | "refund", body: unknown) =>
    sendValue({
      method,
      path: `/api/v1/orders/${encodeURIComponent(id)}/${action}`,
      route: `/api/v1/orders/{id}/${action}`,
      body,
      schema: orderSchema,
    });

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
    updateOrderStatus: (id, status) => orderWrite("PATCH", id, "status", { status }),
    refundOrder: (id, reason) => orderWrite("POST", id, "refund", reason === undefined ? {} : { reason }),
    createBooking: (input) =>
      sendValue({ method: "POST", path: "/api/v1/bookings", route: "/api/v1/bookings", body: input, schema: bookingSchema }),
  };
}

// ---- The list calls: queries, answers, and the reader of one list

export interface ListOptions {
  /** The budget class the read is sent under (upstream/rate-limiter.ts). @defaultValue "webhook" */
  priority?: BudgetClass;
  /**
   * The read time of each attempt (the mirror passes its shared clock, `MirrorStore.clock`).
   * Called after the attempt's rate-limit slot was taken, right before its request is sent, so a
   * wait for the budget, a Retry-After pause or a retry never makes a read look older than it is.
   * The page carries the time of the attempt that answered it. @defaultValue `new Date()` then
   */
  clock?: () => Promise<Date>;
  /** Ends the read wherever it waits (the budget, a retry's backoff, the answer) once aborted. */
  signal?: AbortSignal;
}

/**
 * A page with the time its request was sent (after its rate-limit slot): a lower bound of the
 * instant the API served it. Send time, not answer time, is what stale-read comparisons need: a
 * read sent after a change always sees it, while a slow answer to a request sent before the
 * change may not, and must not look newer than a read sent later.
 */
export type ReadPage<T> = Page<T> & {
  readAt: Date;
  /** Records without the shape the spec promises: left out of `data`, never failing the page. */
  refused: RefusedRecord[];
};
export interface MenuItemQuery {
  restaurantId?: string;
  limit?: number;
  cursor?: string;
}
export interface OrderQuery extends MenuItemQuery {
  status?: string;
  type?: string;
}
export interface BookingQuery extends MenuItemQuery {
  status?: string;
  from?: string;
  to?: string;
}

const checkLimit = (limit: number | undefined) => {
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)) {
    throw new UpstreamRequestError(`limit must be a whole number from 1 to ${MAX_LIMIT}, not ${limit}`);
  }
};

/** One list of the API: a page (`list`) and every page in turn (`iterate`), its records checked one by one. */
function listReader<T, Q extends { limit?: number; cursor?: string }>(
  send: <V>(call: ApiCall<V>) => Promise<{ value: V; sentAt: Date }>,
  path: string,
  schema: z.ZodType<T>,
  toParams: (query: Q) => Record<string, string | number | undefined> = (query) => query,
) {
  const list = async (query: Q = {} as Q, opts: ListOptions = {}): Promise<ReadPage<T>> => {
    checkLimit(query.limit);
    const { value, sentAt } = await send({
      ...opts,
      method: "GET",
      path,
      route: path,
      query: toParams(query),
      schema: looseRecordsPageSchema,
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

// ---- Sending a call: its budget slot, retries and span

/** One request of the client (`sendCall` sends it, with its retries and budget slots). */
interface ApiCall<T> extends ListOptions {
  method: "GET" | "POST" | "PATCH";
  path: string;
  /** A low-cardinality name for metrics ("/api/v1/orders/{id}/status"). */
  route: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  schema: z.ZodType<T>;
}

/** What the client reports of each answer (or its absence), for metrics (ApiClientOptions.onResponse). */
export interface ApiResponseInfo {
  method: string;
  route: string;
  status: number | "timeout" | "network";
  durationMs: number;
  /** The budget class the call was sent under. */
  budget: BudgetClass;
}

/**
 * How one attempt of a call ended (ApiClientOptions.onOutcome): answered (`status`, 2xx for a
 * success) or not (`errno`: the network error's code, or "timeout"); `final` when the client
 * gives up on the call after it (no retry follows).
 */
export interface ApiCallOutcome {
  method: string;
  route: string;
  /** The API's host (and port). */
  host: string;
  /** The answer's status; undefined when none came. */
  status?: number;
  /** Without an answer: the network error's code (ECONNREFUSED, ENOTFOUND, …) or "timeout". */
  errno?: string;
  /** The error's message (names the method, route and host, never the key); undefined on success. */
  message?: string;
  /** This attempt's number in its call, from 1. */
  attempt: number;
  /** No further attempt of this call follows (a success, or the client gives up). */
  final: boolean;
}

/** The client's options that decide how a call is sent and retried, resolved to their values. */
function sendSettings(options: ApiClientOptions) {
  return {
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
    onOutcome: options.onOutcome,
    tracer: options.tracer,
    /** The client's own: aborts every call (the worker's shutdown deadline). */
    signal: options.signal,
  };
}

type SendSettings = ReturnType<typeof sendSettings>;

/** The answer, and when the attempt that got it was sent (see ReadPage); a CLIENT span when tracing is on. */
function sendCall<T>(settings: SendSettings, call: ApiCall<T>): Promise<{ value: T; sentAt: Date }> {
  const { tracer } = settings;
  if (!tracer) return sendWithRetries(settings, call);
  return inSpan(
    tracer,
    `${call.method} ${call.route}`,
    { kind: SpanKind.CLIENT, attributes: { "http.request.method": call.method, "url.template": call.route } },
    (span) => sendWithRetries(settings, call, span),
  );
}

async function sendWithRetries<T>(settings: SendSettings, call: ApiCall<T>, span?: Span): Promise<{ value: T; sentAt: Date }> {
  // Either signal (both may be absent) aborts the call.
  const signal = settings.signal && call.signal ? AbortSignal.any([settings.signal, call.signal]) : (settings.signal ?? call.signal);
  try {
    return await sendUntilDone(settings, call, signal, span);
  } catch (err) {
    // Wherever the call waited (the budget, a backoff, the answer), a stop ends it with one error.
    if (signal?.aborted && !(err instanceof UpstreamAbortedError))
      throw new UpstreamAbortedError(`${call.method} ${call.route} aborted: ${abortReason(signal)}`, err);
    throw err;
  }
}

const abortReason = (signal: AbortSignal) => (signal.reason instanceof Error ? signal.reason.message : String(signal.reason));

async function sendUntilDone<T>(
  settings: SendSettings,
  call: ApiCall<T>,
  signal: AbortSignal | undefined,
  span: Span | undefined,
): Promise<{ value: T; sentAt: Date }> {
  const url = new URL(settings.baseUrl + call.path);
  for (const [k, v] of Object.entries(call.query ?? {})) if (v !== undefined && v !== "") url.searchParams.set(k, String(v));
  let failures = 0;
  let rateLimited = 0;
  const outcome = (attempt: Omit<ApiCallOutcome, "method" | "route" | "host" | "attempt">) =>
    settings.onOutcome?.({ method: call.method, route: call.route, host: url.host, attempt: failures + rateLimited + 1, ...attempt });
  for (;;) {
    const waitStarted = span ? performance.now() : 0;
    const slot = await settings.limiter?.acquireSlot({ priority: call.priority ?? DEFAULT_BUDGET_CLASS, ...(signal ? { signal } : {}) });
    span?.addEvent("rate budget acquired", { "svc.budget.wait_ms": Math.round(performance.now() - waitStarted) });
    try {
      // Per attempt, after the slot: the time of the request actually sent, not of the first try.
      const sentAt = call.clock ? await call.clock() : new Date();
      // The budget counts the slot from the answer on (rate-limiter.ts), whatever the answer was.
      const value = await sendAttempt(settings, call, url, { span, signal }).finally(() => slot?.answered());
      outcome({ status: 200, final: true });
      return { value, sentAt };
    } catch (err) {
      if (signal?.aborted || err instanceof UpstreamAbortedError) throw err;
      const failed = failedOutcome(err);
      if (err instanceof UpstreamRateLimitError) {
        span?.addEvent("rate limited", { "svc.retry_after_ms": err.retryAfterMs });
        const final = rateLimited + 1 > settings.maxRateLimitRetries;
        outcome({ ...failed, final });
        // Nobody sharing the key sends until Retry-After has passed; a 429 was not processed,
        // so even a write is safe to send again.
        await settings.limiter?.pause(err.retryAfterMs);
        if (++rateLimited > settings.maxRateLimitRetries) throw err;
        if (!settings.limiter) await sleep(err.retryAfterMs, signal);
        continue;
      }
      const retryable = call.method === "GET" && err instanceof UpstreamError && err.retryable;
      outcome({ ...failed, final: !retryable || failures + 1 > settings.readRetries });
      if (!retryable || ++failures > settings.readRetries) throw err;
      span?.addEvent("retry", { "svc.retry.reason": (err as Error).message });
      await sleep(backoffMs(failures - 1, settings.retryBaseMs), signal);
    }
  }
}

/** What a failed attempt tells of itself: the answer's status, else the network error's code. */
function failedOutcome(err: unknown): Pick<ApiCallOutcome, "status" | "errno" | "message"> {
  const message = (err as Error).message;
  if (err instanceof UpstreamError && err.status !== undefined) return { status: err.status, message };
  if (err instanceof UpstreamNetworkError) return { errno: err.errno, message };
  if (err instanceof UpstreamTimeoutError) return { errno: "timeout", message };
  // Not the API's failure (a call refused before it was sent, a bug): as if it answered.
  return { status: 0, message };
}

// ---- One attempt and its answer

/** One request and its answer, read (bounded), reported and parsed; retries are the caller's. */
async function sendAttempt<T>(
  settings: SendSettings,
  call: ApiCall<T>,
  url: URL,
  { span, signal }: { span?: Span | undefined; signal?: AbortSignal | undefined } = {},
): Promise<T> {
  const { timeoutMs } = settings;
  const started = performance.now();
  const report = (status: ApiResponseInfo["status"]) => {
    settings.onResponse?.({
      method: call.method,
      route: call.route,
      status,
      durationMs: performance.now() - started,
      budget: call.priority ?? DEFAULT_BUDGET_CLASS,
    });
    if (typeof status === "number") span?.setAttribute("http.response.status_code", status);
  };
  // The timeout covers the whole answer, body included: a body that stalls after the headers
  // is a timeout like any other (retried for a GET), never a raw DOMException.
  let res: Response | undefined;
  let json: unknown;
  // The API sees the call's trace context (W3C), so its own traces can join ours.
  const traceparent = span ? formatTraceparent(span.spanContext()) : undefined;
  const sent = traceparent === undefined ? settings.headers : { ...settings.headers, traceparent };
  const context = `${call.method} ${call.route}`;
  try {
    res = await fetch(url, {
      method: call.method,
      headers: call.body === undefined ? sent : { ...sent, "content-type": "application/json" },
      ...(call.body === undefined ? {} : { body: JSON.stringify(call.body) }),
      // The caller's signal too: a stop ends a hung read at once, not at the timeout.
      signal: signal ? AbortSignal.any([AbortSignal.timeout(timeoutMs), signal]) : AbortSignal.timeout(timeoutMs),
    });
    json = await readAnswer(res, { maxBytes: settings.maxPageBytes, context });
  } catch (err) {
    if (res && err instanceof UpstreamError) {
      report(res.status);
      throw err;
    }
    // Not reported: the API did nothing wrong, the caller stopped.
    if (signal?.aborted) throw new UpstreamAbortedError(`${context} aborted`, err);
    const timedOut = (err as Error).name === "TimeoutError";
    report(timedOut ? "timeout" : "network");
    // The host and the network error's code, never the key: what an operator needs to tell a
    // refused connection from a name that does not resolve.
    if (timedOut) throw new UpstreamTimeoutError(`${context} to ${url.host} timed out after ${timeoutMs} ms`);
    const errno = networkErrno(err);
    throw new UpstreamNetworkError(`${context} to ${url.host} failed: ${errno} (${(err as Error).message})`, err, errno);
  }
  report(res.status);
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

/**
 * The code of a failed fetch: undici throws `TypeError: fetch failed` with the reason in `cause`
 * (`code`: ECONNREFUSED, ENOTFOUND, ECONNRESET, UND_ERR_CONNECT_TIMEOUT, …), sometimes nested in an
 * AggregateError (each address tried); "network" when none says.
 */
export function networkErrno(err: unknown): string {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && /^[A-Z0-9_]{2,40}$/.test(code)) return code;
    const inner = e instanceof AggregateError && e.errors.length > 0 ? (e.errors[0] as unknown) : e.cause;
    e = inner;
  }
  return "network";
}

/**
 * How much of an error answer is read: enough for the documented `{ error: { code, message } }`
 * with a long message; the rest is never read, so a 5 MB message costs 4 KB here and in every
 * failed job's record of it.
 */
export const MAX_ERROR_BODY_BYTES = 4096;

/**
 * Reads a body as text, at most `maxBytes` of it: streamed, and the stream cancelled once the cap
 * is passed (or at once when Content-Length already says so), so an oversized answer never sits in
 * memory whole. `cut` says the body went on past what was kept.
 */
export async function readBodyUpTo(res: Response, maxBytes: number): Promise<{ text: string; cut: boolean }> {
  const declared = Number(res.headers.get("content-length"));
  const body = res.body;
  if (!body) return { text: "", cut: false };
  if (Number.isFinite(declared) && declared > maxBytes) {
    await body.cancel().catch(() => undefined);
    return { text: "", cut: true };
  }
  const reader = (body as ReadableStream<Uint8Array>).getReader();
  const chunks: Uint8Array[] = [];
  let kept = 0;
  let cut = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (kept + value.byteLength > maxBytes) {
      chunks.push(value.subarray(0, maxBytes - kept));
      kept = maxBytes;
      cut = true;
      await reader.cancel().catch(() => undefined);
      break;
    }
    chunks.push(value);
    kept += value.byteLength;
  }
  return { text: new TextDecoder().decode(Buffer.concat(chunks, kept)), cut };
}

/**
 * The JSON of an answer, or the typed error it stands for: an error status becomes the error of
 * its status (its body read to MAX_ERROR_BODY_BYTES), a success body over `maxBytes` is refused
 * (`page_too_large`) without being read further, and one that is not JSON is `invalid_response`.
 * Refusals are not retryable: the same read would get the same answer.
 */
async function readAnswer(res: Response, options: { maxBytes: number; context: string }): Promise<unknown> {
  const { context } = options;
  if (!res.ok) {
    const { text, cut } = await readBodyUpTo(res, MAX_ERROR_BODY_BYTES);
    throw errorFromResponse({
      status: res.status,
      body: text,
      cutAtBytes: cut ? MAX_ERROR_BODY_BYTES : undefined,
      retryAfterMs: parseRetryAfter(res.headers.get("retry-after")),
      context,
    });
  }
  const { text, cut } = await readBodyUpTo(res, options.maxBytes);
  if (cut)
    throw new UpstreamPageRefusedError(
      `${context} answered a body over ${options.maxBytes} bytes (API_MAX_PAGE_BYTES): refused, the rest not read`,
      { status: res.status, code: "page_too_large" },
    );
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new UpstreamResponseError(`${context} answered non-JSON`, { status: res.status });
  }
}

// ---- Timing rules of retries: how long a 429 asks us to wait, and how long to back off before
// re-sending a read. Pure, so both are unit-tested exactly.

/** The three HTTP-date forms a recipient must accept (RFC 9110 §5.6.7). */
const IMF_FIXDATE = /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/;
const RFC_850 = /^[A-Z][a-z]+, \d{2}-[A-Z][a-z]{2}-\d{2} \d{2}:\d{2}:\d{2} GMT$/;
const ASCTIME = /^[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/;

export interface RetryAfterOptions {
  /** The clock, epoch ms (for an HTTP date). */
  now?: number;
  /** Used when the header is missing or garbled. @defaultValue 1000 */
  fallbackMs?: number;
  /** A bogus header must not stop every process for days. @defaultValue 300_000 */
  maxMs?: number;
}

/**
 * `Retry-After` in ms: delta-seconds or an HTTP date; `fallbackMs` when missing or garbled.
 * The date forms are matched exactly because `Date.parse` accepts nearly anything ("-5" is a date).
 */
export function parseRetryAfter(value: string | null | undefined, options: RetryAfterOptions = {}): number {
  const { now = Date.now(), fallbackMs = 1000, maxMs = 300_000 } = options;
  const text = value?.trim() ?? "";
  let ms: number;
  if (/^\d+$/.test(text)) ms = Number(text) * 1000;
  else if (IMF_FIXDATE.test(text) || RFC_850.test(text)) ms = Math.max(0, Date.parse(text) - now);
  // asctime carries no zone but is UTC; Date.parse would read it as local time.
  else if (ASCTIME.test(text)) ms = Math.max(0, Date.parse(`${text} GMT`) - now);
  else return fallbackMs;
  return Math.min(ms, maxMs);
}
