import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

// The layer order of docs/architecture.md, held: every import in src/ (type-only ones too: they
// tie the code as much) goes to its own layer or one below, never above; no folders import each
// other in a loop; the sandbox reads only what it is allowed.

/** Each folder's layer, highest first; a folder may import its own layer and those below. */
const LAYERS: readonly (readonly string[])[] = [
  ["bin", "index"],
  ["service"],
  ["http", "worker"],
  ["alerts", "problems", "metrics"],
  ["queue", "sync"],
  ["upstream", "mirror", "events"],
  ["redis", "config", "logging", "tracing"],
  ["base"],
  ["errors"],
];

/**
 * The sandbox plays the API as the spec describes it: it reads the service's own reading of the
 * spec (what a record is, the page bound, how a delivery is signed) and the bottom layers, none of
 * the machinery. Only the CLI (bin) starts it.
 */
const SANDBOX_MAY_IMPORT = new Set(["config", "base", "errors", "upstream/models.ts", "events/signature-schemes.ts", "events/envelope.ts"]);

const SRC = resolve(import.meta.dirname, "../../src");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return /\.tsx?$/.test(e.name) ? [path] : [];
  });
}

/** `http` for src/http/…, `service` for src/service.ts and src/service/…. */
const folderOf = (file: string) => {
  const [first = "", second] = relative(SRC, file).split("/");
  return second === undefined ? first.replace(/\.tsx?$/, "") : first;
};

interface Import {
  from: string;
  to: string;
}

/** Every relative import of src/ (static, re-exports, dynamic), as paths from src/. */
function imports(): Import[] {
  return sourceFiles(SRC).flatMap((file) => {
    const text = readFileSync(file, "utf8");
    const specifiers = [...text.matchAll(/\bfrom\s+"(\.[^"]+)"|\bimport\(\s*"(\.[^"]+)"\s*\)/g)].map((m) => m[1] ?? m[2] ?? "");
    return specifiers.map((s) => ({
      from: relative(SRC, file),
      to: relative(SRC, resolve(dirname(file), s.replace(/\.js$/, existsTsx(file, s) ? ".tsx" : ".ts"))),
    }));
  });
}

const existsTsx = (file: string, specifier: string) => {
  try {
    readFileSync(resolve(dirname(file), specifier.replace(/\.js$/, ".tsx")));
    return true;
  } catch {
    return false;
  }
};

const layerOf = (folder: string) => LAYERS.findIndex((l) => l.includes(folder));

/** A loop of folders (each importing the next, the last the first), or [] when there is none: a depth-first walk. */
function folderLoop(next: ReadonlyMap<string, ReadonlySet<string>>): string[] {
  const done = new Set<string>();
  const path: string[] = [];
  const walk = (folder: string): string[] => {
    const at = path.indexOf(folder);
    if (at >= 0) return [...path.slice(at), folder];
    if (done.has(folder)) return [];
    path.push(folder);
    for (const to of next.get(folder) ?? []) {
      const loop = walk(to);
      if (loop.length > 0) return loop;
    }
    path.pop();
    done.add(folder);
    return [];
  };
  for (const folder of next.keys()) {
    const loop = walk(folder);
    if (loop.length > 0) return loop;
  }
  return [];
}

describe("the layers", () => {
  const all = imports();
  const between = all.map((i) => ({ ...i, a: folderOf(join(SRC, i.from)), b: folderOf(join(SRC, i.to)) })).filter((i) => i.a !== i.b);

  it("places every folder of src/ in a layer", () => {
    const folders = new Set(sourceFiles(SRC).map(folderOf));
    expect([...folders].filter((f) => f !== "sandbox" && layerOf(f) === -1)).toEqual([]);
  });

  it("has no import of a layer above its own", () => {
    const upward = between.filter((i) => i.a !== "sandbox" && i.b !== "sandbox" && layerOf(i.b) < layerOf(i.a));
    expect(upward.map((i) => `${i.from} → ${i.to}`)).toEqual([]);
  });

  it("has no loop of folders importing each other", () => {
    const next = new Map<string, Set<string>>();
    for (const i of between) next.set(i.a, (next.get(i.a) ?? new Set()).add(i.b));
    expect(folderLoop(next)).toEqual([]);
  });

  it("lets the sandbox read only the spec's definitions and the bottom layers, and only the CLI start it", () => {
    const fromSandbox = between.filter((i) => i.a === "sandbox" && !SANDBOX_MAY_IMPORT.has(i.b) && !SANDBOX_MAY_IMPORT.has(i.to));
    expect(fromSandbox.map((i) => `${i.from} → ${i.to}`)).toEqual([]);
    const intoSandbox = between.filter((i) => i.b === "sandbox" && i.a !== "bin");
    expect(intoSandbox.map((i) => `${i.from} → ${i.to}`)).toEqual([]);
  });

  it("finds what it is for: imports of each kind, an upward one among them when there is one", () => {
    // The reader sees static, type-only, re-exported and dynamic imports (bin's command table).
    expect(all.some((i) => i.from === "bin/cli.ts" && i.to === "bin/trigger.ts")).toBe(true);
    expect(all.some((i) => i.from === "http/console/health-page.tsx" && i.to === "metrics/minute-samples.ts")).toBe(true);
    expect(all.some((i) => i.from === "index.ts")).toBe(true);
    expect(layerOf("config")).toBeGreaterThan(layerOf("upstream"));
  });
});
