import { Registry } from "prom-client";
import { edgeMetrics } from "./edge-metrics.js";
import { eventMetrics } from "./event-metrics.js";
import { processMetrics } from "./process-metrics.js";
import { syncMetrics } from "./sync-metrics.js";
import { upstreamMetrics } from "./upstream-metrics.js";

/**
 * The service's Prometheus metrics, on a registry of its own (never prom-client's global one), so
 * several instances in one process do not collide. Gauges that reflect Redis state are filled by
 * collectors at scrape time (see `addCollector`). Each area's metrics are defined in its own file.
 */
export function createMetrics() {
  const registry = new Registry();
  const collectors: (() => Promise<void>)[] = [];
  const opts = { registers: [registry] };

  return {
    registry,
    ...edgeMetrics(opts),
    ...eventMetrics(opts),
    ...upstreamMetrics(opts),
    ...syncMetrics(opts),
    ...processMetrics(opts),
    /** Runs `collect` before each scrape; a failing collector leaves its gauges as they were. */
    addCollector(collect: () => Promise<void>) {
      collectors.push(collect);
    },
    async render(): Promise<{ contentType: string; body: string }> {
      // A failed collector is skipped: the scrape still answers, with that collector's gauges unchanged.
      await Promise.all(collectors.map((c) => c().catch(() => undefined)));
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
