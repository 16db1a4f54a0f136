// The map from each source file to the tests that import it (test/README.md): where to look, and
// what to run, after changing a file. `npm run test-map` writes it; test/unit/test-map.test.ts
// fails while the committed map differs from the tests' imports.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { format } from "prettier";
import { importGraph, ROOT, sourceFiles } from "./imports.js";

/** Tests named a row at most; the rest are counted (config.ts is imported by most of them). */
const SHOWN = 6;

export const TEST_MAP_FILE = "test/README.md";

/** test/README.md as the tests' imports make it, formatted as prettier keeps it. */
export async function testMapMarkdown(): Promise<string> {
  const tests = sourceFiles("test").filter((f) => f.endsWith(".test.ts"));
  const importers = new Map<string, string[]>(sourceFiles("src").map((f) => [f, []]));
  for (const [test, targets] of importGraph(tests)) for (const target of targets) importers.get(target)?.push(test);
  const cell = (list: readonly string[]) => {
    if (list.length === 0) return "— (only through other files)";
    const shown = [...list]
      .sort()
      .slice(0, SHOWN)
      .map((t) => `\`${t.replace(/^test\//, "")}\``);
    return list.length > SHOWN ? `${shown.join(", ")} and ${list.length - SHOWN} more` : shown.join(", ");
  };
  const rows = [...importers].sort(([a], [b]) => a.localeCompare(b)).map(([file, list]) => `| \`${file}\` | ${cell(list)} |`);
  const untested = [...importers.values()].filter((l) => l.length === 0).length;
  const text = [
    "# Tests, by the source file they import",
    "",
    "Written by `npm run test-map` from the tests' imports (`test/unit/test-map.test.ts` fails while it is not current): for each file of `src/`, the test files that import it directly, paths from `test/`. A file no test imports is tested through the files that use it. `npm test` runs them all; `npx vitest run <file>` one.",
    "",
    `${importers.size} source files; ${untested} reached only through others.`,
    "",
    "| source | tests |",
    "|---|---|",
    ...rows,
    "",
  ].join("\n");
  return format(text, { parser: "markdown", printWidth: 140 });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(join(ROOT, TEST_MAP_FILE), await testMapMarkdown());
  console.log(`wrote ${TEST_MAP_FILE}`);
}
