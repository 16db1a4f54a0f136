import type { MinuteSample } from "../../metrics/minute-samples.js";
import type { ChartSpec } from "./health-charts.js";
import { count } from "./health-figures.js";
import { duration } from "./layout.js";

// Drawn on the server as inline SVG: no script, no library, nothing from another host.
const WIDTH = 560;
const HEIGHT = 170;
const PAD = { left: 52, right: 10, top: 10, bottom: 22 };
const MINUTE_MS = 60_000;
/** One colour a line, in order; the legend names each line in words beside its colour. */
const COLOURS = ["#0b57d0", "#b3261e", "#8a5a00", "#17703a"];

const formatValue = (unit: ChartSpec["unit"], v: number) => (unit === "seconds" ? duration(v) : count(v));

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
          {formatValue(spec.unit, top)}
        </text>
        <text x={PAD.left - 6} y={bottomY + 4} text-anchor="end">
          0
        </text>
        <text x={PAD.left} y={HEIGHT - 4}>{`${minutes} min ago`}</text>
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
            {l.points.length === 0 ? (
              <span class="muted">no samples</span>
            ) : (
              `latest ${formatValue(spec.unit, l.points.at(-1)?.value ?? 0)}`
            )}
          </li>
        ))}
      </ul>
    </figure>
  );
}
