// The health page's charts, in one table: a chart is a row. Each line names a series of the
// minute sampler (metrics/minute-samples.ts).

/** A chart of the last hour: its title, its unit, and the sampled series it draws (metrics/minute-samples.ts names them). */
export interface ChartSpec {
  title: string;
  unit: "count" | "seconds";
  lines: readonly { key: string; label: string }[];
}

export const HEALTH_CHARTS: readonly ChartSpec[] = [
  {
    title: "Deliveries per minute",
    unit: "count",
    lines: [
      { key: "delivered", label: "handled" },
      { key: "retried", label: "failed, to be retried" },
      { key: "failed", label: "failed for good" },
    ],
  },
  {
    title: "Freshness (largest in the minute)",
    unit: "seconds",
    lines: [
      { key: "lagSeconds", label: "oldest waiting event" },
      { key: "mirrorAgeSeconds", label: "stalest mirror kind since its last write" },
    ],
  },
  {
    title: "API budget used per minute, by class",
    unit: "count",
    lines: [
      { key: "budget.webhook", label: "webhook refreshes" },
      { key: "budget.active", label: "active reconciliation" },
      { key: "budget.full", label: "full reconciliation" },
      { key: "rateLimited", label: "429 answers" },
    ],
  },
  { title: "Ingest backlog (largest in the minute)", unit: "count", lines: [{ key: "backlog", label: "events waiting" }] },
];
