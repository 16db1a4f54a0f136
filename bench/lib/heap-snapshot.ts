import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import type { ChildProcess } from "node:child_process";

// What a server process's JS heap holds, from heap snapshots it writes on SIGUSR2 (started with
// `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=<dir>`): self size by constructor (or by the
// node's type where it has none: strings, code, arrays), and what grew between two snapshots.

export interface HeapSummary {
  file: string;
  totalBytes: number;
  /** `type name` → self bytes, largest first. */
  byName: [string, number][];
}

/** The Node options that make a process write a heap snapshot into `dir` on SIGUSR2. */
export const heapSnapshotOptions = (dir: string) => `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${dir}`;

/** Sends SIGUSR2 and resolves with the snapshot's path once it is whole (its size unchanged for 3 s). */
export async function takeHeapSnapshot(child: ChildProcess, dir: string, timeoutMs = 300_000): Promise<string> {
  const before = new Set(existsSync(dir) ? readdirSync(dir) : []);
  child.kill("SIGUSR2");
  const deadline = Date.now() + timeoutMs;
  let file: string | undefined;
  let size = -1;
  let stableSince = Date.now();
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 1000));
    file ??= readdirSync(dir).find((f) => f.endsWith(".heapsnapshot") && !before.has(f));
    if (!file) continue;
    const now = statSync(join(dir, file)).size;
    if (now !== size) {
      size = now;
      stableSince = Date.now();
    } else if (Date.now() - stableSince >= 3000 && size > 0) return join(dir, file);
  }
  throw new Error(`no heap snapshot in ${dir} within ${timeoutMs / 1000} s`);
}

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

export function summarizeHeapSnapshot(file: string): HeapSummary {
  const snap = JSON.parse(readFileSync(file, "utf8")) as Snapshot;
  const fields = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0];
  const width = fields.length;
  const [typeAt, nameAt, sizeAt] = [fields.indexOf("type"), fields.indexOf("name"), fields.indexOf("self_size")];
  const by = new Map<string, number>();
  let totalBytes = 0;
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + typeAt]!] ?? "?";
    const size = snap.nodes[i + sizeAt]!;
    totalBytes += size;
    // Objects and closures by constructor or function name; strings, code, arrays by their type alone.
    const key = type === "object" || type === "closure" || type === "native" ? `${type} ${snap.strings[snap.nodes[i + nameAt]!]}` : type;
    by.set(key, (by.get(key) ?? 0) + size);
  }
  return { file, totalBytes, byName: [...by].sort((a, b) => b[1] - a[1]) };
}

/** What grew from `before` to `after`, by name, most first. */
export function heapGrowth(before: HeapSummary, after: HeapSummary): [string, number][] {
  const was = new Map(before.byName);
  return after.byName.map(([name, bytes]): [string, number] => [name, bytes - (was.get(name) ?? 0)]).sort((a, b) => b[1] - a[1]);
}
