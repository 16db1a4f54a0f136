// What the repository's files import of each other, as the TypeScript compiler resolves it
// (tsconfig.json's NodeNext resolution, `.js` specifiers to `.ts` files), type-only imports, re-
// exports and `import()` counted: a cycle of types is still two modules that cannot be understood
// apart. One reader for the import-cycle and layer tests and the map from sources to their tests
// (scripts/test-map.ts), done with the compiler the project already has rather than a graph tool,
// which would add a resolver of its own and a tree of dependencies.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import ts from "typescript";

/** The repository's root. */
export const ROOT = resolve(import.meta.dirname, "..");

/** The .ts and .tsx files below `dir` (a repository path), as repository paths. */
export function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return /\.tsx?$/.test(e.name) && !e.name.endsWith(".d.ts") ? [path] : [];
  });
}

function compilerOptions(): ts.CompilerOptions {
  const file = join(ROOT, "tsconfig.json");
  const { config } = ts.readConfigFile(file, (path) => ts.sys.readFile(path)) as { config: unknown };
  return ts.parseJsonConfigFileContent(config, ts.sys, ROOT, undefined, file).options;
}

/** Each of `files` (repository paths) with the repository files it imports, once each, as repository paths. */
export function importGraph(files: readonly string[]): Map<string, string[]> {
  const options = compilerOptions();
  return new Map(
    files.map((file) => {
      const path = join(ROOT, file);
      const { importedFiles } = ts.preProcessFile(readFileSync(path, "utf8"), true, true);
      const targets = importedFiles
        .map((i) => ts.resolveModuleName(i.fileName, path, options, ts.sys).resolvedModule?.resolvedFileName)
        .filter((target): target is string => target !== undefined && !target.includes("/node_modules/"))
        .map((target) => relative(ROOT, target));
      return [file, [...new Set(targets)]];
    }),
  );
}

/** A graph's strongly connected components of more than one node, or of one node pointing at itself (Tarjan), each sorted. */
export function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const at = (map: Map<string, number>, node: string) => map.get(node) ?? 0;
  const visit = (node: string) => {
    index.set(node, index.size);
    low.set(node, at(index, node));
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(at(low, node), at(low, next)));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(at(low, node), at(index, next)));
      }
    }
    if (at(low, node) !== at(index, node)) return;
    const component: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop();
      if (member === undefined) break;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || graph.get(node)?.includes(node)) found.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}
