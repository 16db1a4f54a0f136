import type { OpsSummary } from "../../metrics/metrics.js";
import { DASHBOARD_PATH } from "../dashboard.js";
import {
  count,
  FIGURES,
  freshnessFigure,
  type HealthView,
  type Level,
  PROGRESS_LABELS,
  showFigure,
  type ShownFigure,
} from "./health-figures.js";
import { HEALTH_CHARTS } from "./health-charts.js";
import { CONSOLE_PATH, Layout, When } from "./layout.js";
import { MinuteChart } from "./minute-chart.js";

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

/** Every figure with a state, by group, in the order of the table (health-figures.ts). */
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
    <table class="figures">
      <tbody>
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
      </tbody>
    </table>
  );
}

/** Figures in plain words with their state, charts of the last hour, reconciliation progress and queues: the service's health as one screen. */
export function HealthPage(props: { view: HealthView }) {
  const { view } = props;
  const { summary, now } = view;
  const groups = shownGroups(view);
  return (
    <Layout title="Health" section="health">
      <p class="muted">
        As of <When at={summary.at} now={now} /> · hover a state for its rule · the same numbers as <a href="/metrics">/metrics</a>, as JSON
        at <a href={`${CONSOLE_PATH}/health.json`}>{`${CONSOLE_PATH}/health.json`}</a>
      </p>
      <Verdict shown={groups.flatMap(([, shown]) => shown)} />
      <div class="cards figure-cards">
        {groups.map(([group, shown]) => (
          <section class="card" data-testid={`figures-${group.split(/[ ,]/)[0]?.toLowerCase()}`}>
            <h2>{group}</h2>
            <table class="figures">
              <tbody>
                {shown.map((s) => (
                  <FigureRow shown={s} />
                ))}
              </tbody>
            </table>
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
          <table>
            <thead>
              <tr>
                <th>Queue</th>
                <th class="num">Failed</th>
                <th class="num">Delayed</th>
                <th class="num">Waiting</th>
                <th class="num">Active</th>
              </tr>
            </thead>
            <tbody>
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
            </tbody>
          </table>
        </section>
      </div>
    </Layout>
  );
}
