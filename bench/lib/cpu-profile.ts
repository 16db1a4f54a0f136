import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

// Where a server process's CPU went, from the V8 CPU profile `--cpu-prof` wrote at its exit
// (BENCH_CPU_PROF, lib/server-process.ts): self time by area (a file of src/, a package of
// node_modules, Node's own internals, GC) and by function, most first.

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export interface CpuProfileSummary {
  file: string;
  /** Sampled time, ms (idle excluded). */
  busyMs: number;
  byArea: [string, number][];
  byFunction: [string, number][];
  /**
   * Each sample given to the nearest function of our own code (src/) on its stack, the libraries it
   * called included: which part of the service spends the CPU. Samples without one keep their area.
   */
  byOwnCode: [string, number][];
}

/** The area a frame's file belongs to: `src/sync/walk-list.ts`, `node_modules/pg`, `node:internal`, or V8's own `(garbage collector)`. */
function areaOf(url: string, functionName: string): string {
  if (url === "") return functionName.startsWith("(") ? functionName : "(native)";
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (modules) return `node_modules/${modules[1]}`;
  if (url.startsWith("node:")) return "node:internal";
  const src = /\/((?:src|bench|test)\/.*)$/.exec(url);
  return src ? src[1]! : url;
}

/**
 * The newest profile of `pid`'s main thread in `dir` (`CPU.<date>.<time>.<pid>.<tid>.<seq>.cpuprofile`;
 * thread 0: tsx's loader thread writes one too), undefined when none.
 */
export function profileOf(dir: string, pid: number): string | undefined {
  const newest = readdirSync(dir)
    .filter((f) => f.endsWith(".cpuprofile") && f.split(".")[3] === String(pid) && f.split(".")[4] === "0")
    .sort()
    .at(-1);
  return newest === undefined ? undefined : join(dir, newest);
}

export function summarizeCpuProfile(file: string): CpuProfileSummary {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  // Each sample's time is the delta to the next one; hitCount × the mean interval where there are none.
  const selfMs = new Map<number, number>();
  if (profile.samples && profile.timeDeltas) {
    profile.samples.forEach((id, i) => {
      const next = profile.timeDeltas![i + 1] ?? 0;
      selfMs.set(id, (selfMs.get(id) ?? 0) + next / 1000);
    });
  } else {
    const hits = profile.nodes.reduce((n, node) => n + (node.hitCount ?? 0), 0);
    const interval = (profile.endTime - profile.startTime) / 1000 / Math.max(1, hits);
    for (const node of profile.nodes) selfMs.set(node.id, (node.hitCount ?? 0) * interval);
  }
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const ownOf = (id: number): string | undefined => {
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at)?.callFrame;
      if (frame?.url.includes("/src/")) return `${frame.functionName || "(anonymous)"} ${areaOf(frame.url, frame.functionName)}`;
    }
    return undefined;
  };
  const area = new Map<string, number>();
  const fn = new Map<string, number>();
  const own = new Map<string, number>();
  let busyMs = 0;
  for (const [id, ms] of selfMs) {
    const node = byId.get(id);
    if (!node || node.callFrame.functionName === "(idle)") continue;
    busyMs += ms;
    const a = areaOf(node.callFrame.url, node.callFrame.functionName);
    area.set(a, (area.get(a) ?? 0) + ms);
    const name = `${node.callFrame.functionName || "(anonymous)"} ${a}:${node.callFrame.lineNumber + 1}`;
    fn.set(name, (fn.get(name) ?? 0) + ms);
    const mine = ownOf(id) ?? a;
    own.set(mine, (own.get(mine) ?? 0) + ms);
  }
  const top = (m: Map<string, number>) => [...m].sort((x, y) => y[1] - x[1]);
  return { file, busyMs, byArea: top(area), byFunction: top(fn), byOwnCode: top(own) };
}
