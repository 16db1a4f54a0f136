import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/**
 * The upstream API's metrics: requests by route and status, 429s, and the shared rate budget by class.
 * Names, help texts and labels are what docs/ and the alert rules in deploy/prometheus read.
 */
export function upstreamMetrics(opts: { registers: Registry[] }) {
  return {
    upstreamRequests: new Counter({
      name: "svc_upstream_requests_total",
      help: "Requests to the upstream API by route and status",
      labelNames: ["method", "route", "status"],
      ...opts,
    }),
    upstreamRateLimited: new Counter({ name: "svc_upstream_rate_limited_total", help: "429 answers from the upstream API", ...opts }),
    rateBudgetRemaining: new Gauge({
      name: "svc_upstream_rate_budget_remaining",
      help: "Requests left in the shared window of the API key",
      ...opts,
    }),
    upstreamPausedSeconds: new Gauge({ name: "svc_upstream_pause_seconds", help: "Seconds left in a shared Retry-After pause", ...opts }),
    budgetSlots: new Counter({
      name: "svc_upstream_budget_slots_total",
      help: "Slots of the shared rate budget taken, by budget class (webhook, active, full)",
      labelNames: ["class"],
      ...opts,
    }),
    budgetWaitSeconds: new Histogram({
      name: "svc_upstream_budget_wait_seconds",
      help: "Time a call waited for its slot of the shared rate budget (pauses included), by budget class",
      labelNames: ["class"],
      buckets: [0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      ...opts,
    }),
    budgetRateLimited: new Counter({
      name: "svc_upstream_budget_rate_limited_total",
      help: "429 answers from the upstream API, by the budget class of the call (every class pauses)",
      labelNames: ["class"],
      ...opts,
    }),
  };
}
