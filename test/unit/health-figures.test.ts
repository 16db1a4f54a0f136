import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import {
  ALERT_THRESHOLDS,
  FIGURES,
  freshnessFigure,
  type HealthView,
  sampledTotal,
  showFigure,
} from "../../src/http/console/health-page.js";
import type { OpsSummary } from "../../src/metrics/metrics.js";

const NOW = new Date("2026-11-25T12:00:00Z");
const summary = (over: Partial<OpsSummary> = {}): OpsSummary => ({
  at: NOW.toISOString(),
  freshness: [
    { kind: "orders", lastWriteAgeSeconds: 30 },
    { kind: "reviews", lastWriteAgeSeconds: 86_400 },
  ],
  rateBudget: { max: 100, used: 40, left: 60, pausedSeconds: 0 },
  ingest: { backlog: 0, lagSeconds: 0 },
  missedWebhooks: [],
  reconciliation: {
    lastSuccessAt: new Date(NOW.getTime() - 600_000).toISOString(),
    lastCompleteFullPassAt: new Date(NOW.getTime() - 600_000).toISOString(),
    progress: [],
  },
  queues: [{ queue: "events", counts: { failed: 0 } }],
  database: { up: true },
  ...over,
});
const view = (over: Partial<OpsSummary> = {}, samples: HealthView["samples"] = []): HealthView => ({
  summary: summary(over),
  samples,
  limits: { maxBacklog: 10_000, reconcileIntervalSeconds: 3600 },
  now: NOW,
});
const figure = (label: string) => {
  const found = FIGURES.find((f) => f.label === label);
  if (!found) throw new Error(`no figure ${label}`);
  return found;
};
const shown = (label: string, v: HealthView) => showFigure(figure(label), v);

describe("the health figures table", () => {
  it("labels every figure in plain words, never a metric name, and gives every rule a reason", () => {
    for (const f of [...FIGURES, freshnessFigure("orders")]) {
      expect(f.label).not.toMatch(/svc_|_/);
      if (f.rule) expect(f.rule.reason(view().limits)).toMatch(/^(Warning|Bad)/);
    }
  });

  it("says ok, warn or bad by each rule's thresholds", () => {
    const backlog = "Events waiting for a worker";
    expect(shown(backlog, view({ ingest: { backlog: 1000, lagSeconds: 0 } })).level).toBe("ok");
    expect(shown(backlog, view({ ingest: { backlog: 1001, lagSeconds: 0 } })).level).toBe("warn");
    // 90% of MAX_BACKLOG (10,000): the edge is about to refuse.
    expect(shown(backlog, view({ ingest: { backlog: 9000, lagSeconds: 0 } })).level).toBe("bad");
    const lag = "Oldest waiting event";
    expect(shown(lag, view({ ingest: { backlog: 0, lagSeconds: 61 } })).level).toBe("warn");
    expect(shown(lag, view({ ingest: { backlog: 0, lagSeconds: 301 } })).level).toBe("bad");
    const dead = "Dead letters waiting for a replay";
    expect(shown(dead, view()).level).toBe("ok");
    expect(
      shown(
        dead,
        view({
          queues: [
            { queue: "events", counts: { failed: 2 } },
            { queue: "sync", counts: { failed: 1 } },
          ],
        }),
      ),
    ).toMatchObject({
      text: "3 jobs",
      level: "bad",
    });
    expect(shown("Database (event log and mirror)", view({ database: { up: false } }))).toMatchObject({ text: "down", level: "bad" });
    expect(shown("Requests left in this window", view({ rateBudget: { max: 100, used: 100, left: 0, pausedSeconds: 0 } })).level).toBe(
      "warn",
    );
  });

  it("counts missed webhooks and 429s over the samples: any is a warning, missed webhooks past the alert's 10 are bad", () => {
    const samples = (missed: number[]) => missed.map((n, i) => ({ minute: i, values: { missed: n, rateLimited: i === 0 ? 1 : 0 } }));
    expect(shown("Missed webhooks found, last hour", view({}, samples([0, 0]))).level).toBe("ok");
    expect(shown("Missed webhooks found, last hour", view({}, samples([0, 23]))).level).toBe("bad");
    expect(shown("Missed webhooks found, last hour", view({}, samples([4, 3]))).level).toBe("warn");
    expect(shown("429 answers from the API, last hour", view({}, samples([0]))).level).toBe("warn");
    // No sampler has written yet: said so, with no state rather than a reassuring 0.
    const unsampled = shown("Missed webhooks found, last hour", view());
    expect([unsampled.text, unsampled.level]).toEqual(["no samples yet", undefined]);
    expect(sampledTotal([], "missed")).toBeNull();
  });

  it("puts the last complete reconciliation in words and ISO time: late after 2 intervals, bad after 3", () => {
    const at = (hoursAgo: number) => new Date(NOW.getTime() - hoursAgo * 3600_000).toISOString();
    const label = "Last complete full reconciliation pass";
    const passed = (hoursAgo: number) => ({ lastSuccessAt: at(hoursAgo), lastCompleteFullPassAt: at(hoursAgo), progress: [] });
    const recent = shown(label, view({ reconciliation: passed(0.05) }));
    expect(recent).toMatchObject({ text: "3 min ago", at: at(0.05), level: "ok" });
    expect(shown(label, view({ reconciliation: passed(2.5) })).level).toBe("warn");
    expect(shown(label, view({ reconciliation: passed(3.5) })).level).toBe("bad");
    expect(shown(label, view({ reconciliation: { lastSuccessAt: null, lastCompleteFullPassAt: null, progress: [] } })).text).toBe(
      "not scheduled here",
    );
  });

  it("never shows the worker's start as the last complete pass", () => {
    const label = "Last complete full reconciliation pass";
    // The worker started 69 s ago and no full pass has completed: the stall baseline is the start, the page says none.
    const started = new Date(NOW.getTime() - 69_000).toISOString();
    const none = shown(label, view({ reconciliation: { lastSuccessAt: started, lastCompleteFullPassAt: null, progress: [] } }));
    expect(none.text).toBe("none completed since the worker started");
    expect(none.text).not.toContain("1 min 9 s");
    // A pass that completed 7 min 13 s ago is shown as such, whenever the worker started.
    const done = new Date(NOW.getTime() - 433_000).toISOString();
    expect(shown(label, view({ reconciliation: { lastSuccessAt: started, lastCompleteFullPassAt: done, progress: [] } })).text).toBe(
      "7 min 13 s ago",
    );
  });

  it("flags a stale mirror kind after the alert's 3 hours, but never reviews (webhook-only, as in the alert)", () => {
    const stale = view({
      freshness: [
        { kind: "orders", lastWriteAgeSeconds: 4 * 3600 },
        { kind: "reviews", lastWriteAgeSeconds: 86_400 },
      ],
    });
    expect(showFigure(freshnessFigure("orders"), stale)).toMatchObject({ text: "4 h ago", level: "warn" });
    expect(showFigure(freshnessFigure("reviews"), stale).level).toBeUndefined();
    expect(showFigure(freshnessFigure("orders"), view()).level).toBe("ok");
  });

  it("rates failed API calls of the last 5 minutes by the upstream errors alert's threshold", () => {
    const figure = FIGURES.find((f) => f.label.startsWith("Failed API calls"))!;
    const minutes = (counts: number[]) => counts.map((n, i) => ({ minute: i, values: { upstreamErrors: n } }));
    // Only the last five minutes count: an hour-old outage is no failure now.
    expect(showFigure(figure, view({}, minutes([50, 0, 0, 0, 0, 0]))).level).toBe("ok");
    expect(showFigure(figure, view({}, minutes([0, 1, 0, 0, 0, 0]))).level).toBe("warn");
    expect(showFigure(figure, view({}, minutes([0, 2, 2, 1, 1, 0]))).level).toBe("bad");
  });

  it("shares its thresholds with deploy/prometheus/alerts.yml (each number is the one its alert fires on)", () => {
    const alerts = readFileSync(fileURLToPath(new URL("../../deploy/prometheus/alerts.yml", import.meta.url)), "utf8");
    const threshold = (name: string) => {
      const expr = new RegExp(`alert: ${name}\\n\\s+expr: (.*)`).exec(alerts)?.[1];
      const bound = expr && /> ([\d* ]+?)(?: and .*)?$/.exec(expr)?.[1];
      if (!bound) throw new Error(`no threshold for ${name}`);
      return bound.split("*").reduce((n, f) => n * Number(f.trim()), 1);
    };
    for (const [name, value] of Object.entries(ALERT_THRESHOLDS)) expect(threshold(name), name).toBe(value);
    // The stalled alert's hours are three of the default interval, as the page's "bad" is three intervals.
    expect(ALERT_THRESHOLDS.SvcReconciliationStalled).toBe((3 * loadConfig({ SIGNING_SECRET: "a" }).worker.reconcileIntervalMs) / 1000);
  });
});
