import { describe, expect, it } from "vitest";
import { cycles, importGraph, sourceFiles } from "../../scripts/imports.js";

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
const SANDBOX_MAY_IMPORT = new Set(["config", "base", "errors", "upstream/models.ts", "events/signature-schemes.ts"]);

/** `http` for src/http/…, `service` for src/service.ts and src/service/…. */
const folderOf = (file: string) => {
  const [, first = "", second] = file.split("/");
  return second === undefined ? first.replace(/\.tsx?$/, "") : first;
};

/** A path from src/ (what the failures name). */
const inSrc = (path: string) => path.replace(/^src\//, "");

const layerOf = (folder: string) => LAYERS.findIndex((l) => l.includes(folder));

describe("the layers", () => {
  const all = [...importGraph(sourceFiles("src"))].flatMap(([from, targets]) =>
    targets.map((to) => ({ from: inSrc(from), to: inSrc(to), a: folderOf(from), b: folderOf(to) })),
  );
  const between = all.filter((i) => i.a !== i.b);

  it("places every folder of src/ in a layer", () => {
    const folders = new Set(sourceFiles("src").map(folderOf));
    expect([...folders].filter((f) => f !== "sandbox" && layerOf(f) === -1)).toEqual([]);
  });

  it("has no import of a layer above its own", () => {
    const upward = between.filter((i) => i.a !== "sandbox" && i.b !== "sandbox" && layerOf(i.b) < layerOf(i.a));
    expect(upward.map((i) => `${i.from} → ${i.to}`)).toEqual([]);
  });

  it("has no loop of folders importing each other", () => {
    const folders = new Map<string, string[]>();
    for (const i of between) folders.set(i.a, [...new Set([...(folders.get(i.a) ?? []), i.b])]);
    expect(cycles(folders)).toEqual([]);
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
