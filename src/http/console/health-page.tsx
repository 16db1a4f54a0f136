import type { Child } from "hono/jsx";
import type { MinuteSample } from "../../metrics/minute-samples.js";
import type { OpsSummary } from "../../metrics/metrics.js";
import { keptFresh } from "../../mirror/kinds.js";
import { CONSOLE_PATH, DASHBOARD_PATH, METRICS_PATH } from "../operator-routes.js";
import { duration } from "../../base/duration.js";
import { age, ago, hrefWith, Layout, Table, When, type ListedAccount } from "./layout.js";

// The health page: every figure it shows with the rule that rates it (FIGURES), the charts of the
// last hour (HEALTH_CHARTS, drawn by MinuteChart), and the page that lays them out.

/**
 * Every figure the health page shows, in one table: its label in plain words, its unit, and, for a
 * figure that can be bad, the rule that says ok, warn or bad and why. The page only lays the rows
 * out; a new figure is a row here.
 */

export type Level = "ok" | "warn" | "bad";

/**
 * The thresholds of deploy/prometheus/alerts.yml that the page shares, by alert name (the unit
 * test reads the alert rules and checks each number against its rule): a figure past one is bad.
 */
export const ALERT_THRESHOLDS = {
  /** Seconds the oldest accepted event waits for a worker. */
  SvcIngestLagHigh: 300,
  /** Events in the ingest backlog (a ticket when it keeps growing). */
  SvcIngestBacklogGrowing: 1000,
  /** Seconds since a mirror kind (reviews aside) took a write. */
  SvcMirrorStale: 3 * 3600,
  /** Changes the sweep found that no webhook announced, in an hour. */
  SvcMissedWebhooksRising: 10,
  /** Seconds without a complete full pass: three of the default RECONCILE_INTERVAL_SECONDS. */
  SvcReconciliationStalled: 3 * 3600,
  /** Upstream calls without an answer (network error, timeout) or answered 5xx, in 5 minutes. */
  SvcUpstreamErrors: 5,
} as const;

/** The service's own limits the rules scale with (from the config). */
export interface HealthLimits {
  /** MAX_BACKLOG: the edge answers 503 once the ingest backlog reaches it. */
  maxBacklog: number;
  /** RECONCILE_INTERVAL_SECONDS (0: no reconciliation is scheduled). */
  reconcileIntervalSeconds: number;
}

/** What the page is drawn from: the summary of this moment, the shared minute samples, the limits. */
export interface HealthView {
  summary: OpsSummary;
  samples: readonly MinuteSample[];
  limits: HealthLimits;
  now: Date;
}

/** A count of a noun; seconds as a duration; seconds ago; a moment (ms since the epoch) as "… ago"; 1 or 0 as up or down. */
type Unit = { noun: string } | "duration" | "age" | "since" | "up-down";

interface Rule {
  /** Why the thresholds are where they are (the state's tooltip). */
  reason(limits: HealthLimits): string;
  level(value: number, limits: HealthLimits, view: HealthView): Level;
}

export interface Figure {
  group: string;
  label: string;
  unit: Unit;
  /** null: not measured here (shown as "unknown", or what `missing` says). */
  value(view: HealthView): number | null;
  missing?: string | ((view: HealthView) => string);
  rule?: Rule;
  /** Where the figure's items are listed, linked from its value when there are any. */
  href?: string;
}

/** The sum of a sampled series over the samples (the last hour), or null with no samples yet. */
export function sampledTotal(samples: readonly MinuteSample[], key: string): number | null {
  if (samples.length === 0) return null;
  return samples.reduce((n, s) => n + (s.values[key] ?? 0), 0);
}

const above = (warn: number, bad: number) => (v: number) => (v > bad ? "bad" : v > warn ? "warn" : "ok");
const sum = (values: readonly { value: number }[]) => values.reduce((n, v) => n + v.value, 0);
const A = ALERT_THRESHOLDS;
/** A reconciliation pass is late after this many intervals, stalled (the alert) after three. */
const LATE_INTERVALS = 2;
const STALLED_INTERVALS = 3;
const BACKLOG_FULL_SHARE = 0.9;
const DELIVERIES = "Deliveries, last hour (every worker)";

/** A figure summed over the minute samples of the last hour (`key` names the sampled series). */
const sampled = (group: string, label: string, key: string, noun: string, rule?: Rule, href?: string): Figure => ({
  group,
  label,
  unit: { noun },
  value: (v) => sampledTotal(v.samples, key),
  missing: "no samples yet",
  ...(rule ? { rule } : {}),
  ...(href ? { href } : {}),
});

export const FIGURES: readonly Figure[] = [
  {
    group: "Ingest",
    label: "Events waiting for a worker",
    unit: { noun: "events" },
    value: (v) => v.summary.ingest.backlog,
    rule: {
      reason: (l) =>
        `Warning above ${count(A.SvcIngestBacklogGrowing)} (the backlog alert); bad from ${BACKLOG_FULL_SHARE * 100}% of MAX_BACKLOG (${count(l.maxBacklog)}), where the edge starts answering 503`,
      level: (v, l) => (v >= l.maxBacklog * BACKLOG_FULL_SHARE ? "bad" : v > A.SvcIngestBacklogGrowing ? "warn" : "ok"),
    },
  },
  {
    group: "Ingest",
    label: "Oldest waiting event",
    unit: "duration",
    value: (v) => v.summary.ingest.lagSeconds,
    rule: {
      reason: () => `Warning after a minute; bad after ${duration(A.SvcIngestLagHigh)} (the ingest lag alert): workers do not keep up`,
      level: above(60, A.SvcIngestLagHigh),
    },
  },
  {
    group: "Ingest",
    label: "Database (event log and mirror)",
    unit: "up-down",
    value: (v) => (v.summary.database.up === null ? null : v.summary.database.up ? 1 : 0),
    rule: {
      reason: () => "Bad when the database does not answer a ping: events wait until it is back",
      level: (v) => (v === 1 ? "ok" : "bad"),
    },
  },
  sampled(DELIVERIES, "Events handled", "delivered", "events"),
  sampled(DELIVERIES, "Attempts failed, to be retried", "retried", "attempts", {
    reason: () => "Warning when handlers fail: the events are retried, then given up on",
    level: above(0, Infinity),
  }),
  sampled(DELIVERIES, "Events failed for good", "failed", "events", {
    reason: () => "Bad when any event failed for good: it waits for a replay (the dead-letter alert)",
    level: above(0, 0),
  }),
  {
    group: DELIVERIES,
    label: "Dead letters waiting for a replay",
    unit: { noun: "jobs" },
    value: (v) => sum(v.summary.queues.map((q) => ({ value: q.counts.failed ?? 0 }))),
    rule: { reason: () => "Bad when any job failed for good: look at it and replay it (Failures page)", level: above(0, 0) },
  },
  {
    group: "Reconciliation",
    label: "Last complete full reconciliation pass",
    unit: "since",
    // A pass that completed, never the worker's start (the stall alert's baseline until one completes).
    value: (v) => (v.summary.reconciliation.lastCompleteFullPassAt ? Date.parse(v.summary.reconciliation.lastCompleteFullPassAt) : null),
    missing: (v) => (v.summary.reconciliation.lastSuccessAt === null ? "not scheduled here" : "none completed since the worker started"),
    rule: {
      reason: (l) =>
        `Warning after ${LATE_INTERVALS} reconciliation intervals (${duration(LATE_INTERVALS * l.reconcileIntervalSeconds)}); bad after ${STALLED_INTERVALS} (${duration(STALLED_INTERVALS * l.reconcileIntervalSeconds)}, the stalled alert)`,
      level: (at, { reconcileIntervalSeconds: every }, view) =>
        every === 0 ? "ok" : above(LATE_INTERVALS * every, STALLED_INTERVALS * every)((view.now.getTime() - at) / 1000),
    },
  },
  sampled(
    "Reconciliation",
    "Missed webhooks found, last hour",
    "missed",
    "changes",
    {
      reason: () =>
        `Warning when reconciliation finds a change no webhook announced; bad above ${A.SvcMissedWebhooksRising} an hour (the missed-webhooks alert)`,
      level: above(0, A.SvcMissedWebhooksRising),
    },
    // The changes themselves, each linking to its record's story.
    `${CONSOLE_PATH}/changes`,
  ),
  {
    group: "Reconciliation",
    label: "Full reconciliation pass: records read",
    unit: { noun: "records" },
    value: (v) => progressTotal(v.summary, "svc_reconcile_full_pass_records"),
    missing: "no pass in this process",
  },
  {
    group: "API budget",
    label: "Requests left in this window",
    unit: { noun: "requests" },
    value: (v) => v.summary.rateBudget?.left ?? null,
    missing: "no upstream client in this process",
    rule: {
      reason: () => "Warning when the shared budget is spent: refreshes and sweeps wait (the budget alert)",
      level: (v) => (v < 1 ? "warn" : "ok"),
    },
  },
  {
    group: "API budget",
    label: "Retry-After pause left",
    unit: "duration",
    value: (v) => v.summary.rateBudget?.pausedSeconds ?? null,
    missing: "no upstream client in this process",
    rule: { reason: () => "Warning while the API asked every caller to pause", level: above(0, Infinity) },
  },
  {
    group: "API budget",
    label: "Failed API calls (no answer, a timeout or a 5xx), last 5 minutes",
    unit: { noun: "calls" },
    value: (v) => (v.samples.length === 0 ? null : v.samples.slice(-5).reduce((n, s) => n + (s.values.upstreamErrors ?? 0), 0)),
    missing: "no samples yet",
    rule: {
      reason: () =>
        `Bad past ${A.SvcUpstreamErrors} in 5 minutes (the upstream errors alert); the upstream_unreachable problem names the host and the cause`,
      level: above(0, A.SvcUpstreamErrors),
    },
  },
  sampled("API budget", "429 answers from the API, last hour", "rateLimited", "answers", {
    reason: () => "Warning on any 429: the budget is set above the API's limit, or another client shares the key (the rate-limited alert)",
    level: above(0, Infinity),
  }),
];

/** The mirror's freshness, a figure per kind (one that arrives only by webhook may be quiet: no rule, as in the alert). */
export function freshnessFigure(kind: string): Figure {
  return {
    group: "Mirror freshness",
    label: `Last write to ${kind}`,
    unit: "age",
    value: (v) => v.summary.freshness.find((f) => f.kind === kind)?.lastWriteAgeSeconds ?? null,
    missing: "never written",
    ...(keptFresh(kind) ? { rule: STALE_RULE } : {}),
  };
}

const STALE_RULE: Rule = {
  reason: () => `Warning after ${duration(A.SvcMirrorStale)} without a write (the mirror-stale alert)`,
  level: above(A.SvcMirrorStale, Infinity),
};

/** The reconciliation and sync progress gauges, in words, with the label each is split by. */
const PROGRESS_LABELS: Readonly<Record<string, { label: string; noun: string; by: string }>> = {
  svc_reconcile_full_pass_records: { label: "Full reconciliation pass: records read", noun: "records", by: "kind" },
  svc_reconcile_full_pass_pages: { label: "Full reconciliation pass: pages read", noun: "pages", by: "kind" },
  svc_sync_unlisted_total: { label: "Ids the API never listed (since start)", noun: "ids", by: "kind" },
  svc_sync_refresh_reads_total: { label: "Refresh list reads (since start)", noun: "reads", by: "kind" },
};

function progressTotal(summary: OpsSummary, name: string): number | null {
  const metric = summary.reconciliation.progress.find((m) => m.name === name);
  return metric && metric.values.length > 0 ? sum(metric.values) : null;
}

const NUMBER = new Intl.NumberFormat("en-US", { maximumFractionDigits: 1 });
/** 12,345 */
export const count = (n: number) => NUMBER.format(n);

/** A figure as the page shows it: its text, an ISO time for a moment, its level and the rule's reason. */
export interface ShownFigure {
  figure: Figure;
  text: string;
  /** The ISO 8601 time behind a "… ago" text. */
  at?: string;
  /** The list behind a non-zero figure (Figure.href). */
  href?: string;
  level?: Level;
  reason?: string;
}

export function showFigure(figure: Figure, view: HealthView): ShownFigure {
  const value = figure.value(view);
  if (value === null) return { figure, text: (typeof figure.missing === "function" ? figure.missing(view) : figure.missing) ?? "unknown" };
  const shown: ShownFigure = { figure, text: formatValue(figure.unit, value, view.now) };
  if (figure.unit === "since") shown.at = new Date(value).toISOString();
  if (figure.href && value > 0) shown.href = figure.href;
  if (figure.rule) {
    shown.level = figure.rule.level(value, view.limits, view);
    shown.reason = figure.rule.reason(view.limits);
  }
  return shown;
}

function formatValue(unit: Unit, value: number, now: Date): string {
  if (unit === "duration") return duration(value);
  if (unit === "age") return age(value);
  if (unit === "since") return ago(new Date(value), now);
  if (unit === "up-down") return value === 1 ? "up" : "down";
  return `${count(value)} ${unit.noun}`;
}

// The health page's charts, in one table: a chart is a row. Each line names a series of the
// minute sampler (metrics/minute-samples.ts). Drawn on the server as inline SVG (MinuteChart).

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

// Drawn on the server as inline SVG: no script, no library, nothing from another host.
const WIDTH = 560;
const HEIGHT = 170;
const PAD = { left: 52, right: 10, top: 10, bottom: 22 };
const MINUTE_MS = 60_000;
/** One colour a line, in order; the legend names each line in words beside its colour. */
const COLOURS = ["#0b57d0", "#b3261e", "#8a5a00", "#17703a"];

const chartValue = (unit: ChartSpec["unit"], v: number) => (unit === "seconds" ? duration(v) : count(v));

/** The smallest 1, 2 or 5 × 10ⁿ at or above `n` (at least 1): the chart's top line. */
export function niceCeiling(n: number): number {
  if (!(n > 1)) return 1;
  const power = 10 ** Math.floor(Math.log10(n));
  const step = [1, 2, 5, 10].find((m) => m * power >= n) ?? 10;
  return step * power;
}

/**
 * An SVG path through a series' points over the last `minutes` minutes up to `now` (points outside
 * are left out): one M or L command a sampled minute, a new M after a minute with no sample (no
 * line drawn across a gap).
 */
export function seriesPath(
  points: readonly { minute: number; value: number }[],
  options: { now: number; minutes: number; top: number },
): string {
  const last = Math.floor(options.now / MINUTE_MS);
  const first = last - options.minutes + 1;
  const plotW = WIDTH - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const x = (minute: number) => PAD.left + (plotW * (minute - first)) / Math.max(1, options.minutes - 1);
  const y = (value: number) => PAD.top + plotH - (plotH * Math.min(value, options.top)) / options.top;
  let previous: number | undefined;
  const commands = points
    .filter((p) => p.minute >= first && p.minute <= last)
    .map((p) => {
      const command = previous === p.minute - 1 ? "L" : "M";
      previous = p.minute;
      return `${command}${x(p.minute).toFixed(1)} ${y(p.value).toFixed(1)}`;
    });
  return commands.join(" ");
}

/** A chart of sampled series over the last hour, or "no samples yet" until the sampler wrote one. */
export function MinuteChart(props: { spec: ChartSpec; samples: readonly MinuteSample[]; now: Date; minutes?: number }) {
  const { spec, samples } = props;
  const minutes = props.minutes ?? 60;
  const lines = spec.lines.map((line, i) => ({
    ...line,
    colour: COLOURS[i % COLOURS.length],
    points: samples.flatMap((s) => (s.values[line.key] === undefined ? [] : [{ minute: s.minute, value: s.values[line.key] ?? 0 }])),
  }));
  if (lines.every((l) => l.points.length === 0)) {
    return (
      <figure class="chart">
        <figcaption>{spec.title}</figcaption>
        <p class="muted chart-empty">No samples yet: a worker records one a minute.</p>
      </figure>
    );
  }
  const top = niceCeiling(Math.max(...lines.flatMap((l) => l.points.map((p) => p.value))));
  const bottomY = HEIGHT - PAD.bottom;
  return (
    <figure class="chart">
      <figcaption>{spec.title}</figcaption>
      <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-label={`${spec.title}, last ${minutes} minutes`}>
        <line x1={PAD.left} y1={PAD.top} x2={WIDTH - PAD.right} y2={PAD.top} class="grid" />
        <line x1={PAD.left} y1={bottomY} x2={WIDTH - PAD.right} y2={bottomY} class="axis" />
        <text x={PAD.left - 6} y={PAD.top + 4} text-anchor="end">
          {chartValue(spec.unit, top)}
        </text>
        <text x={PAD.left - 6} y={bottomY + 4} text-anchor="end">
          0
        </text>
        <text x={PAD.left} y={HEIGHT - 4}>
          {age(minutes * 60)}
        </text>
        <text x={WIDTH - PAD.right} y={HEIGHT - 4} text-anchor="end">
          now
        </text>
        {lines.map((l) =>
          l.points.length === 0 ? null : (
            <path d={seriesPath(l.points, { now: props.now.getTime(), minutes, top })} stroke={l.colour} fill="none">
              <title>{l.label}</title>
            </path>
          ),
        )}
      </svg>
      <ul class="legend">
        {lines.map((l) => (
          <li>
            {/* A presentation attribute, not a style attribute: the console's CSP allows no inline style. */}
            <svg class="swatch" viewBox="0 0 10 10" aria-hidden="true">
              <rect width="10" height="10" fill={l.colour} />
            </svg>
            {l.label}:{" "}
            {l.points.length === 0 ? <span class="muted">no samples</span> : `latest ${chartValue(spec.unit, l.points.at(-1)?.value ?? 0)}`}
          </li>
        ))}
      </ul>
    </figure>
  );
}

/** The state as a word beside its colour (never colour alone), the rule's reason as its tooltip. */
const WORDS: Record<Level, string> = { ok: "OK", warn: "warning", bad: "bad" };

function LevelWord(props: { level: Level | undefined; reason: string | undefined }) {
  if (!props.level) return <span class="muted">—</span>;
  return (
    <span class={`level level-${props.level}`} title={props.reason}>
      {WORDS[props.level]}
    </span>
  );
}

function FigureRow(props: { shown: ShownFigure }) {
  const { shown } = props;
  return (
    <tr>
      <th scope="row">{shown.figure.label}</th>
      <td class="num">
        {shown.at ? (
          <time datetime={shown.at} title={shown.at}>
            {shown.text}
          </time>
        ) : shown.href ? (
          <a href={hrefWith(shown.href)}>{shown.text}</a>
        ) : (
          shown.text
        )}
      </td>
      <td>
        <LevelWord level={shown.level} reason={shown.reason} />
      </td>
    </tr>
  );
}

/** Every figure with a state, by group, in the order of the table (FIGURES). */
function shownGroups(view: HealthView): [string, ShownFigure[]][] {
  const figures = [...FIGURES, ...view.summary.freshness.map((f) => freshnessFigure(f.kind))];
  const groups = new Map<string, ShownFigure[]>();
  for (const figure of figures) groups.set(figure.group, [...(groups.get(figure.group) ?? []), showFigure(figure, view)]);
  return [...groups];
}

/** The one line an operator reads first: what is bad, what needs a look. */
function Verdict(props: { shown: ShownFigure[] }) {
  const bad = props.shown.filter((s) => s.level === "bad");
  const warn = props.shown.filter((s) => s.level === "warn");
  if (bad.length + warn.length === 0)
    return (
      <p class="verdict" data-testid="verdict">
        <span class="level level-ok">OK</span> every figure is within its threshold.
      </p>
    );
  return (
    <p class="verdict" data-testid="verdict">
      {bad.length > 0 ? <span class="level level-bad">{`${bad.length} bad`}</span> : null}{" "}
      {warn.length > 0 ? <span class="level level-warn">{`${warn.length} warning${warn.length > 1 ? "s" : ""}`}</span> : null}{" "}
      {[...bad, ...warn].map((s) => s.figure.label).join(" · ")}
    </p>
  );
}

/** The reconciliation and sync progress gauges in words, one row a label value (kind, tier). */
function Progress(props: { summary: OpsSummary; now: Date }) {
  const rows = props.summary.reconciliation.progress.flatMap((m) => {
    const words = PROGRESS_LABELS[m.name];
    return m.values.map((v) => ({
      label: words?.label ?? m.help,
      of: Object.values(v.labels).join(" · "),
      noun: words?.noun ?? "",
      name: m.name,
      value: v.value,
    }));
  });
  if (rows.length === 0) return <p class="muted">No reconciliation in this process.</p>;
  return (
    <Table class="figures">
      {rows.map((r) => (
        <tr>
          <th scope="row">
            {r.label} <span class="muted">{r.of}</span>
          </th>
          <td class="num">
            {r.name.endsWith("_timestamp_seconds") ? (
              <When at={r.value > 0 ? new Date(r.value * 1000) : null} now={props.now} />
            ) : (
              `${count(r.value)} ${r.noun}`
            )}
          </td>
        </tr>
      ))}
    </Table>
  );
}

/** The registered accounts' syncs: each id (linking to its events), its state and, while it imports, the records each kind's walk has read. */
function AccountsTable(props: { accounts: readonly ListedAccount[] }) {
  return (
    <Table columns={["Account", "Sync", "Records read (first import)"]}>
      {props.accounts.map((a) => (
        <tr>
          <td class="mono">
            <a href={hrefWith(`${CONSOLE_PATH}/events`, {}, a.id)}>{a.id}</a>
          </td>
          <td>{a.sync?.state ?? <span class="muted">unknown</span>}</td>
          <td>
            {a.sync?.state === "importing"
              ? Object.entries(a.sync.kinds)
                  .map(([kind, k]) => `${kind} ${count(k.records)}${k.walked ? " (whole list walked)" : ""}`)
                  .join(" · ")
              : null}
          </td>
        </tr>
      ))}
    </Table>
  );
}

/** Figures in plain words with their state, charts of the last hour, reconciliation progress, queues and accounts' syncs: the service's health as one screen. */
export function HealthPage(props: {
  view: HealthView;
  accounts: readonly ListedAccount[];
  /** A section shown first, above the verdict (the open problems). */
  lead?: Child;
}) {
  const { view } = props;
  const { summary, now } = view;
  const groups = shownGroups(view);
  return (
    <Layout title="Health" section="health" deployment>
      <p class="muted">
        As of <When at={summary.at} now={now} /> · hover a state for its rule · the same numbers as{" "}
        <a href={METRICS_PATH}>{METRICS_PATH}</a>, as JSON at <a href={`${CONSOLE_PATH}/health.json`}>{`${CONSOLE_PATH}/health.json`}</a>
      </p>
      {props.lead}
      <Verdict shown={groups.flatMap(([, shown]) => shown)} />
      <div class="cards figure-cards">
        {groups.map(([group, shown]) => (
          <section class="card" data-testid={`figures-${group.split(/[ ,]/)[0]?.toLowerCase()}`}>
            <h2>{group}</h2>
            <Table class="figures">
              {shown.map((s) => (
                <FigureRow shown={s} />
              ))}
            </Table>
          </section>
        ))}
      </div>
      <h2>Last hour, every worker (one sample a minute)</h2>
      <div class="charts" data-testid="charts">
        {HEALTH_CHARTS.map((spec) => (
          <MinuteChart spec={spec} samples={view.samples} now={now} />
        ))}
      </div>
      <div class="cards wide">
        <section class="card" data-testid="reconciliation">
          <h2>Reconciliation progress</h2>
          <Progress summary={summary} now={now} />
        </section>
        <section class="card" data-testid="queues">
          <h2>Queues</h2>
          <Table columns={["Queue", "Failed", "Delayed", "Waiting", "Active"]} num={["Failed", "Delayed", "Waiting", "Active"]}>
            {summary.queues.map((q) => (
              <tr>
                <td>
                  <a href={`${DASHBOARD_PATH}/queue/${encodeURIComponent(q.queue)}`}>{q.queue}</a>
                </td>
                <td class={`num${(q.counts.failed ?? 0) > 0 ? " bad" : ""}`}>{count(q.counts.failed ?? 0)}</td>
                <td class="num">{count(q.counts.delayed ?? 0)}</td>
                <td class="num">{count(q.counts.waiting ?? 0)}</td>
                <td class="num">{count(q.counts.active ?? 0)}</td>
              </tr>
            ))}
          </Table>
        </section>
      </div>
      {props.accounts.length > 0 ? (
        <section class="card" data-testid="accounts">
          <h2>Accounts</h2>
          <AccountsTable accounts={props.accounts} />
        </section>
      ) : null}
    </Layout>
  );
}
