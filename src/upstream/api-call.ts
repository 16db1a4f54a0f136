import type * as z from "zod";
import type { BudgetClass } from "./rate-limiter.js";

/** One request of the client (send-call.ts sends it, with its retries and budget slots). */
export interface ApiCall<T> {
  method: "GET" | "POST" | "PATCH";
  path: string;
  /** A low-cardinality name for metrics ("/api/v1/orders/{id}/status"). */
  route: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  schema: z.ZodType<T>;
  priority?: BudgetClass;
  clock?: () => Promise<Date>;
  /** Ends the call (its budget wait, retries and request) with UpstreamAbortedError once aborted. */
  signal?: AbortSignal;
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
