import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/**
 * The delivery path's metrics: jobs and their queues, the ingest stream's backlog and what each worker holds of it.
 * Names, help texts and labels are what docs/ and the alert rules in deploy/prometheus read.
 */
export function eventMetrics(opts: { registers: Registry[] }) {
  return {
    jobs: new Counter({
      name: "svc_jobs_total",
      help: "Jobs finished, by queue, job name (event type) and outcome",
      labelNames: ["queue", "name", "outcome"],
      ...opts,
    }),
    jobSeconds: new Histogram({
      name: "svc_job_duration_seconds",
      help: "Time to run a job's handlers, by queue and job name",
      labelNames: ["queue", "name"],
      buckets: [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60],
      ...opts,
    }),
    queueDepth: new Gauge({ name: "svc_queue_jobs", help: "Jobs in each queue by state", labelNames: ["queue", "state"], ...opts }),
    streamBacklog: new Gauge({
      name: "svc_ingest_backlog_events",
      help: "Events accepted by the edge that no worker has finished with yet (unread, or read and unacknowledged)",
      ...opts,
    }),
    consumerLag: new Gauge({
      name: "svc_ingest_lag_seconds",
      help: "Age of the oldest event in the ingest stream (0 when none)",
      ...opts,
    }),
    eventsConsumed: new Counter({
      name: "svc_ingest_consumed_total",
      help: "Events workers took from the ingest stream and settled",
      ...opts,
    }),
    eventsClaimed: new Counter({
      name: "svc_ingest_claimed_total",
      help: "Events a stopped worker left unacknowledged, moved into the events queue by another",
      ...opts,
    }),
    inflightEntries: new Gauge({
      name: "svc_ingest_inflight_entries",
      help: "Ingest stream entries this worker read and has not acknowledged yet (at most INGEST_BATCH_SIZE)",
      ...opts,
    }),
    inflightBytes: new Gauge({
      name: "svc_ingest_inflight_bytes",
      help: "Bytes of the ingest stream entries this worker holds (at most WORKER_MAX_INFLIGHT_BYTES, or one entry)",
      ...opts,
    }),
    attemptsWaitingOnLog: new Gauge({
      name: "svc_event_log_waiting_attempts",
      help: "Attempts handled from the ingest stream that wait for the event log to record them (the database is away or refuses writes)",
      ...opts,
    }),
  };
}
