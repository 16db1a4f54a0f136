import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/http/app.js";
import { mountConsole } from "../../src/http/console/console-routes.js";
import type { ConsoleSources } from "../../src/http/console/console-routes.js";
import type { MinuteSample } from "../../src/metrics/minute-samples.js";
import { createMetrics, collectOpsSummary } from "../../src/metrics/metrics.js";

// The health page in memory through app.request(): the summary comes off a real metrics registry
// holding the figures a new operator found unreadable (raw names, Unix times).
const TOKEN = "admin-token-for-tests-0123456789";
const NOW = new Date("2026-11-25T12:00:30Z");
const CURRENT = Math.floor(NOW.getTime() / 60_000);

async function healthPage(samples: MinuteSample[], summaryAt?: Date): Promise<string> {
  const metrics = createMetrics();
  metrics.fullPassRecords.set({ kind: "orders" }, 12_345);
  metrics.fullPassPages.set({ kind: "orders" }, 124);
  metrics.reconcileLastSuccess.set(NOW.getTime() / 1000 - 180);
  // A full pass completed 3 min ago (a start of the worker is no complete pass: the page shows only this).
  metrics.reconcileLastCompletePass.set({ tier: "full" }, NOW.getTime() / 1000 - 180);
  metrics.syncUnlisted.inc({ kind: "bookings" });
  metrics.streamBacklog.set(2);
  metrics.consumerLag.set(4);
  metrics.queueDepth.set({ queue: "events", state: "failed" }, 3);
  metrics.rateBudgetRemaining.set(80);
  metrics.databaseUp.set(1);
  const collected = await collectOpsSummary(metrics, { kinds: ["orders", "reviews"], rateMax: 120 });
  const summary = summaryAt ? { ...collected, at: summaryAt.toISOString() } : collected;
  const unused = () => Promise.reject(new Error("not read by the health page"));
  const sources: ConsoleSources = {
    events: { get: unused, query: unused },
    changesAfter: unused,
    changesBySource: unused,
    failureGroups: unused,
    mirror: { kinds: [], get: unused, list: unused, bookkeeping: unused },
    summary: () => Promise.resolve(summary),
    records: { kinds: [], story: unused, refresh: unused, find: unused },
    health: () => Promise.resolve({ summary, samples, limits: { maxBacklog: 100_000, reconcileIntervalSeconds: 3600 } }),
  };
  const app = createApp({
    logger: pino({ level: "silent" }),
    ready: () => Promise.resolve(),
    mount: (root) => mountConsole(root, { adminToken: TOKEN, sources, logger: pino({ level: "silent" }), now: () => NOW }),
  });
  const res = await app.request("/console/health", { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(200);
  return res.text();
}

describe("the console's health page", () => {
  it("names every figure in plain words, with human times and no raw metric name or Unix time", async () => {
    const html = await healthPage([]);
    expect(html).not.toContain("svc_");
    expect(html).not.toContain("17956078");
    expect(html).toContain("Full reconciliation pass: records read");
    expect(html).toContain("12,345 records");
    expect(html).toMatch(/<time datetime="2026-11-25T11:57:30.000Z" title="2026-11-25T11:57:30.000Z">3 min ago<\/time>/);
    expect(html).toContain("Ids the API never listed");
  });

  it("says the summary is of just now when it was gathered a moment after the page's clock, never in 0 s", async () => {
    const html = await healthPage([], new Date(NOW.getTime() + 300));
    expect(html).toMatch(
      /As of <time datetime="2026-11-25T12:00:30.300Z"[^>]*>2026-11-25 12:00:30Z <span class="muted">\(just now\)<\/span>/,
    );
    expect(html).not.toContain("in 0 s");
  });

  it("gives each state a word and its rule as a tooltip, and the verdict up top", async () => {
    const html = await healthPage([{ minute: CURRENT, values: { missed: 23, delivered: 5 } }]);
    expect(html).toMatch(/<span class="level level-bad" title="Bad when any job failed for good[^"]*">bad<\/span>/);
    expect(html).toMatch(/<span class="level level-bad" title="Warning when reconciliation finds[^"]*">bad<\/span>/);
    expect(html).toContain("23 changes");
    expect(html).toMatch(/data-testid="verdict">.*2 bad.*Dead letters waiting for a replay/s);
  });

  it("draws the last hour's charts from the samples, and says so when there are none", async () => {
    const empty = await healthPage([]);
    expect(empty.match(/No samples yet/g)).toHaveLength(4);
    const drawn = await healthPage([
      { minute: CURRENT - 1, values: { delivered: 5, backlog: 2 } },
      { minute: CURRENT, values: { delivered: 6, backlog: 1 } },
    ]);
    expect(drawn).toMatch(/<svg viewBox="0 0 560 170"/);
    expect(drawn.match(/<path d="M[\d.]+ [\d.]+ L[\d.]+ [\d.]+"/g)).toHaveLength(2);
  });

  it("refers to no other host", async () => {
    const html = await healthPage([{ minute: CURRENT, values: { delivered: 1 } }]);
    expect(html).not.toMatch(/(https?:)?\/\/[a-z0-9]/i);
  });
});
