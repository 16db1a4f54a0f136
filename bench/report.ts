import type { EndToEndPair, EndToEndRun } from "./e2e.js";
import { BEFORE_TRACING } from "./lib/baseline-tree.js";
import { median, PEERS, SERVERS, type IngestKey, type IngestRow, type IngestRun } from "./ingest.js";

const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
const spread = (r: number[]) => `${fmt(median(r), 2)} (${fmt(Math.min(...r), 2)}–${fmt(Math.max(...r), 2)})`;
/** Median and range of a ratio, the worst round first: the lowest when higher is better, else the highest. */
const worstFirst = (r: number[], higherIsBetter: boolean) => {
  const [worst, best] = higherIsBetter ? [Math.min(...r), Math.max(...r)] : [Math.max(...r), Math.min(...r)];
  return `${fmt(median(r), 2)} (${fmt(worst, 2)}–${fmt(best, 2)})`;
};

/** The peer with the highest median req/s. */
export function bestPeer(rows: Record<IngestKey, IngestRow>): IngestKey {
  return [...PEERS].sort((x, y) => median(rows[y].runs.map((r) => r.rps)) - median(rows[x].runs.map((r) => r.rps)))[0]!;
}

/** The ingest table in Markdown, and the ratios of ours to the ceiling and the best peer. */
export function ingestReport(rows: Record<IngestKey, IngestRow>, opts: { rounds: number; seconds: number; connections: number }) {
  const med = (key: IngestKey, pick: (run: IngestRun) => number | undefined) => {
    const found = rows[key].runs.map(pick).filter((v): v is number => v !== undefined);
    return found.length ? median(found) : undefined;
  };
  const us = (v: number | undefined) => (v === undefined ? "—" : fmt(v));
  const paired = (x: IngestKey, y: IngestKey, pick: (r: IngestRun) => number) =>
    rows[y].runs.length === rows[x].runs.length ? rows[x].runs.map((run, i) => pick(run) / pick(rows[y].runs[i]!)) : [];
  const best = bestPeer(rows);
  // A run of some rows only (--rows): no ceiling or peer to compare with.
  const partial = rows.a.runs.length === 0 || PEERS.some((k) => rows[k].runs.length === 0);
  const ratios = {
    oursOverPlain: paired("c", "a", (r) => r.rps),
    oursOverBestPeer: paired("c", best, (r) => r.rps),
    p99OursOverBestPeer: paired("c", best, (r) => r.p99Ms),
    oursAtDebugOverBestPeer: paired("g", best, (r) => r.rps),
    tracingOnOverOff: paired("t", "c", (r) => r.rps),
    tracingOnOverOffCpu: paired("t", "c", (r) => r.cpu.serverUs),
    // The A/B: tracing off at this commit ÷ the edge before tracing landed.
    offOverBeforeTracing: paired("c", "p", (r) => r.rps),
    p99OffOverBeforeTracing: paired("c", "p", (r) => r.p99Ms),
    cpuOffOverBeforeTracing: paired("c", "p", (r) => r.cpu.serverUs),
  };
  const lines = [
    `Ingest: signed ~1 KB unique events, wrk -t1 -c${opts.connections}, ${opts.rounds} interleaved rounds of ${opts.seconds} s after a 3 s warm-up; medians.`,
    "",
    "| server | req/s | × plain | p50 ms | p99 ms | non-200 | stored / 200s | CPU µs per request: server | wrk | Redis (per script call) |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  const plain = med("a", (r) => r.rps);
  for (const { key } of SERVERS) {
    const runs = rows[key].runs;
    if (rows[key].skipped) lines.push(`| ${rows[key].name} | skipped: ${rows[key].skipped} | | | | | | | | |`);
    if (runs.length === 0) continue;
    const stored = runs.every((r) => r.jobsInRedis !== undefined)
      ? `${fmt(runs.reduce((n, r) => n + r.jobsInRedis!, 0))} / ${fmt(runs.reduce((n, r) => n + r.ok, 0))}`
      : "—";
    const redisUs = med(key, (r) => r.cpu.redisUs);
    const rps = med(key, (r) => r.rps)!;
    lines.push(
      `| ${rows[key].name}${key === best && !partial ? " — best peer" : ""} | ${fmt(rps)} | ${plain === undefined ? "—" : fmt(rps / plain, 2)} | ${fmt(
        med(key, (r) => r.p50Ms)!,
        2,
      )} | ${fmt(
        med(key, (r) => r.p99Ms)!,
        2,
      )} | ${runs.reduce((n, r) => n + r.errors, 0)} | ${stored} | ${us(med(key, (r) => r.cpu.serverUs))} | ${us(med(key, (r) => r.cpu.wrkUs))} | ${redisUs === undefined ? "—" : `${fmt(redisUs)} (${us(med(key, (r) => r.cpu.addScriptUs))})`} |`,
    );
  }
  if (!partial)
    lines.push(
      "",
      `**ours ÷ best peer (${rows[best].name}), req/s: ${spread(ratios.oursOverBestPeer)}** (target ≥ 1.5); p99 ours ${fmt(
        med("c", (r) => r.p99Ms)!,
        2,
      )} ms vs best peer ${fmt(
        med(best, (r) => r.p99Ms)!,
        2,
      )} ms (ratio per round ${spread(ratios.p99OursOverBestPeer)}, target ≤ 1); ours ÷ plain ${spread(ratios.oursOverPlain)}; ours at LOG_LEVEL=debug ÷ best peer ${spread(ratios.oursAtDebugOverBestPeer)}; tracing on ÷ off (c″ ÷ c): req/s ${spread(ratios.tracingOnOverOff)}, server CPU per request ${spread(ratios.tracingOnOverOffCpu)}. Ratios: median (range) of the rounds, each round's runs paired.`,
    );
  lines.push(
    "",
    abLine(rows, ratios),
    "",
    "Stored: jobs in BullMQ for the peers, stream entries for ours (no worker runs in this table, so MAX_BACKLOG is lifted for it); it can exceed the 200s because wrk drops answers still in flight when it stops. Redis CPU is per stored event; in brackets the µs per EVALSHA call (one per job for the peers, one per group-committed batch for ours).",
  );
  return { lines, ratios, best };
}

/** The Redis commands costing most per event, medians over the runs. */
function redisBreakdown(runs: EndToEndRun[]): string {
  const names = [...new Set(runs.flatMap((r) => Object.keys(r.redisCommands)))];
  const rows = names.map((c) => ({
    c,
    calls: median(runs.map((r) => r.redisCommands[c]?.calls ?? 0)),
    us: median(runs.map((r) => r.redisCommands[c]?.us ?? 0)),
  }));
  return rows
    .filter((r) => r.us >= 0.5)
    .sort((a, b) => b.us - a.us)
    .slice(0, 6)
    .map((r) => `${r.c} ${fmt(r.calls, 2)}× ${fmt(r.us)} µs`)
    .join(", ");
}

/** The end-to-end table in Markdown. */
export function endToEndReport(
  pairs: readonly EndToEndPair[],
  runs: EndToEndRun[][],
  opts: { rounds: number; seconds: number; concurrency: number; database: string },
) {
  const med = (i: number, pick: (r: EndToEndRun) => number) => median(runs[i]!.map(pick));
  const ratio = runs[0]!.map((run, k) => run.eventsPerSecond / runs[1]![k]!.eventsPerSecond);
  const lines = [
    `End to end: the same load for ${opts.seconds} s (${opts.rounds} interleaved rounds, medians), receiver and worker in two processes, no-op handler, worker concurrency ${opts.concurrency}; events fully processed per second, from the load's start to the last job finishing.`,
    "",
    "| pipeline | events processed/s | during the load /s | edge req/s | edge p99 ms | CPU µs per event: receiver | worker | Redis | PostgreSQL |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...pairs.map(
      (p, i) =>
        `| ${p.name} | ${fmt(med(i, (r) => r.eventsPerSecond))} | ${fmt(med(i, (r) => r.duringLoadPerSecond))} | ${fmt(med(i, (r) => r.edgeRps))} | ${fmt(
          med(i, (r) => r.p99Ms),
          2,
        )} | ${fmt(med(i, (r) => r.cpu.receiverUs))} | ${fmt(med(i, (r) => r.cpu.workerUs))} | ${fmt(med(i, (r) => r.cpu.redisUs))} | ${p.usesDatabase && runs[i]!.every((r) => r.cpu.postgresUs !== undefined) ? fmt(med(i, (r) => r.cpu.postgresUs!)) : "—"} |`,
    ),
    "",
    `**ours ÷ best peer, end to end: ${spread(ratio)}** (target ≥ 1).`,
    "",
    `Database (ours: event log and mirror, shared by the web and worker processes, a fresh schema per run): ${opts.database}. Redis per event, ours (median calls × and µs inside Redis): ${redisBreakdown(runs[0]!)}; peer: ${redisBreakdown(runs[1]!)}.`,
  ];
  return { lines, ratio };
}

/** The A/B of tracing off: (c) at this commit against (c₀), the same edge before tracing landed. */
function abLine(
  rows: Record<IngestKey, IngestRow>,
  ratios: Record<"offOverBeforeTracing" | "p99OffOverBeforeTracing" | "cpuOffOverBeforeTracing", number[]>,
) {
  const head =
    "Tracing off (c) is the edge as shipped with no OTEL_EXPORTER_OTLP_ENDPOINT: the SDK is not loaded and the request path has no span, no context and no extra field (the hooks are not installed).";
  if (rows.p.skipped) return `${head} The A/B against the edge before tracing (c₀) was skipped: ${rows.p.skipped}.`;
  if (ratios.offOverBeforeTracing.length === 0) return head;
  return `${head} **A/B, tracing off ÷ before tracing (c ÷ c₀), median (worst–best round): req/s ${worstFirst(ratios.offOverBeforeTracing, true)}, p99 ${worstFirst(
    ratios.p99OffOverBeforeTracing,
    false,
  )}, server CPU µs per request ${worstFirst(ratios.cpuOffOverBeforeTracing, false)}**; (c) and (c₀) run back to back in each round, their order swapped every other round. (c₀) also lacks every other change made to the edge since ${BEFORE_TRACING}.`;
}
