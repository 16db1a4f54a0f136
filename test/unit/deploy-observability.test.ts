import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Histogram } from "prom-client";
import { describe, expect, it } from "vitest";
import { createMetrics } from "../../src/metrics/metrics.js";
import { KINDS, MIRROR_KINDS } from "../../src/mirror/kinds.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const read = (path: string) => readFileSync(`${ROOT}/${path}`, "utf8");
const alerts = read("deploy/prometheus/alerts.yml");
const dashboard = JSON.parse(read("deploy/grafana/svc-webhooks.json")) as {
  templating: { list: { name: string; type: string; query: string }[] };
  panels: { type: string; datasource?: { uid: string }; targets?: { expr: string; datasource?: { uid: string } }[] }[];
};

/** The series names the service registers, with the ones Prometheus derives from a histogram. */
function registeredSeries(): Set<string> {
  const names = new Set<string>();
  for (const m of createMetrics().registry.getMetricsAsArray()) {
    names.add(m.name);
    if (m instanceof Histogram) for (const suffix of ["_bucket", "_sum", "_count"]) names.add(m.name + suffix);
  }
  return names;
}

const seriesIn = (text: string) => [...new Set(text.match(/\bsvc_[a-z0-9_]+/g) ?? [])];

const promtool = (() => {
  try {
    execFileSync("promtool", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

describe("deploy/: alert rules and the Grafana dashboard", () => {
  const registered = registeredSeries();
  const dashboardExprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));

  it("alert only on metrics the service registers", () => {
    const used = seriesIn(alerts);
    expect(used.length).toBeGreaterThan(10);
    expect(used.filter((name) => !registered.has(name))).toEqual([]);
  });

  it("chart only metrics the service registers", () => {
    const used = seriesIn(dashboardExprs.join("\n"));
    expect(used.length).toBeGreaterThan(10);
    expect(used.filter((name) => !registered.has(name))).toEqual([]);
  });

  it("has an alert for each thing that should page or be looked at", () => {
    const names = [...alerts.matchAll(/- alert: (\w+)/g)].map((m) => m[1]);
    expect(names).toEqual(
      expect.arrayContaining([
        "SvcWebhookSignatureRefusals",
        "SvcEdgeServerErrors",
        "SvcEdgeBackpressure",
        "SvcIngestLagHigh",
        "SvcIngestBacklogGrowing",
        "SvcDeadLettersGrowing",
        "SvcMirrorStale",
        "SvcUpstreamBudgetExhausted",
        "SvcUpstreamRateLimited",
        "SvcUpstreamErrors",
        "SvcMissedWebhooksRising",
        "SvcReconciliationStalled",
        "SvcWorkersAbsent",
        "SvcEventLogNotRecording",
      ]),
    );
  });

  it("leaves out of SvcMirrorStale exactly the kinds that arrive only by webhook (src/mirror/kinds.ts)", () => {
    const expr = /alert: SvcMirrorStale\n\s+expr: (.*)/.exec(alerts)?.[1] ?? "";
    const left = [...expr.matchAll(/kind!="([^"]+)"/g)].map((m) => m[1]);
    const excluded = /kind!~"([^"]+)"/.exec(expr)?.[1]?.split("|") ?? [];
    expect([...left, ...excluded].sort()).toEqual(MIRROR_KINDS.filter((kind) => KINDS[kind].webhookOnly).sort());
  });

  it("imports as is: the Prometheus data source is a template variable every query uses", () => {
    expect(dashboard.templating.list).toContainEqual(
      expect.objectContaining({ name: "datasource", type: "datasource", query: "prometheus" }),
    );
    for (const panel of dashboard.panels.filter((p) => p.type !== "row")) {
      expect(panel.datasource?.uid).toBe("${datasource}");
      for (const t of panel.targets ?? []) expect(t.datasource?.uid).toBe("${datasource}");
    }
  });

  // CI installs Debian's prometheus package for promtool (.ci/run) and runs it there too.
  it.skipIf(!promtool)("pass promtool check rules and promtool's unit tests of every alert", () => {
    const cwd = `${ROOT}/deploy/prometheus`;
    execFileSync("promtool", ["check", "rules", "alerts.yml"], { cwd, stdio: "pipe" });
    execFileSync("promtool", ["test", "rules", "alerts.test.yml"], { cwd, stdio: "pipe" });
  });
  if (!promtool) console.warn("promtool not found: skipping `promtool test rules` (install Debian's prometheus package; CI runs it)");
});
