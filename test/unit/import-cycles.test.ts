import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

// The import graph of src/ as the TypeScript compiler resolves it (tsconfig.json's NodeNext
// resolution, `.js` specifiers to `.ts` files), with type-only imports counted: a cycle of types
// is still two modules that cannot be understood apart. Done with the compiler the project already
// has rather than a graph tool, which would add a resolver of its own and a tree of dependencies.

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SRC = join(ROOT, "src");

function compilerOptions(): ts.CompilerOptions {
  const file = join(ROOT, "tsconfig.json");
  const { config } = ts.readConfigFile(file, (path) => ts.sys.readFile(path)) as { config: unknown };
  return ts.parseJsonConfigFileContent(config, ts.sys, ROOT, undefined, file).options;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith(".d.ts") ? [path] : [];
  });
}

/** Each src file and the src files it imports (static, `export … from`, `import type` and `import()`). */
function importGraph(): Map<string, string[]> {
  const options = compilerOptions();
  const files = sourceFiles(SRC);
  const inSrc = new Set(files);
  return new Map(
    files.map((file) => {
      const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
      const targets = importedFiles
        .map((i) => ts.resolveModuleName(i.fileName, file, options, ts.sys).resolvedModule?.resolvedFileName)
        .filter((target): target is string => target !== undefined && inSrc.has(target));
      return [file, [...new Set(targets)]];
    }),
  );
}

/** The graph's strongly connected components of more than one file, or of one file importing itself (Tarjan). */
function cycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string) => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(file, Math.min(low.get(file)!, index.get(next)!));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(relative(ROOT, member));
    } while (member !== file);
    if (component.length > 1 || graph.get(file)?.includes(file)) found.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

describe("src/ import graph", () => {
  const graph = importGraph();

  it("resolves the project's `.js` specifiers to its `.ts` files (else an empty graph would pass)", () => {
    const imports = (from: string) => (graph.get(join(SRC, from)) ?? []).map((f) => relative(SRC, f));
    expect(imports("sync/refresh-kind.ts")).toContain("sync/read-plan.ts");
    expect(imports("sync/refresh-kind.ts")).toContain("sync/resources.ts");
  });

  it("keeps the sync engine below the worker and the HTTP edge (they wire it; it never reaches back)", () => {
    const upward = [...graph]
      .filter(([file]) => relative(SRC, file).startsWith("sync/"))
      .flatMap(([file, targets]) => targets.map((t) => `${relative(SRC, file)} → ${relative(SRC, t)}`))
      .filter((edge) => / → (worker|http)\//.test(edge));
    expect(upward).toEqual([]);
  });

  it("has no import cycle", () => {
    expect(cycles(graph)).toEqual([]);
  });
});
