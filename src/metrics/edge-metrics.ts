import { Counter, Histogram, type Registry } from "prom-client";

/**
 * The edge's metrics: deliveries accepted, deduplicated and refused, how fast Redis took them, and 5xx answers.
 * Names, help texts and labels are what docs/ and the alert rules in deploy/prometheus read.
 */
export function edgeMetrics(opts: { registers: Registry[] }) {
  return {
    eventsReceived: new Counter({
      name: "svc_webhook_events_received_total",
      help: "Events accepted (200), by type and by the index of the signing secret that matched",
      labelNames: ["type", "secret"],
      ...opts,
    }),
    eventsDeduplicated: new Counter({
      name: "svc_webhook_events_deduplicated_total",
      help: "Accepted redeliveries of an event id already seen within the window",
      labelNames: ["type"],
      ...opts,
    }),
    eventsRejected: new Counter({
      name: "svc_webhook_events_rejected_total",
      help: "Deliveries refused, by reason",
      labelNames: ["reason"],
      ...opts,
    }),
    enqueueSeconds: new Histogram({
      name: "svc_webhook_enqueue_seconds",
      help: "Time for Redis to acknowledge an event",
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      ...opts,
    }),
    httpServerErrors: new Counter({
      name: "svc_http_server_errors_total",
      help: "Answers with a 5xx status (503: Redis away, backlog full or body budget spent), by status",
      labelNames: ["status"],
      ...opts,
    }),
  };
}
