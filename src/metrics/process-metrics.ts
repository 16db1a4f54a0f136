import { Gauge, type Registry } from "prom-client";

/**
 * This process's own metrics: the role it runs and whether its database answers.
 * Names, help texts and labels are what docs/ and the alert rules in deploy/prometheus read.
 */
export function processMetrics(opts: { registers: Registry[] }) {
  return {
    role: new Gauge({
      name: "svc_role_info",
      help: "1 for the role this process runs (all, web or worker): a worker that stops being scraped is absent",
      labelNames: ["role"],
      ...opts,
    }),
    databaseUp: new Gauge({
      name: "svc_database_up",
      help: "1 when the database (mirror and event log) answered a ping at scrape time, else 0",
      ...opts,
    }),
    databasePingSeconds: new Gauge({
      name: "svc_database_ping_seconds",
      help: "How long the database took to answer the scrape's ping",
      ...opts,
    }),
  };
}
