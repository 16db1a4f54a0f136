import { describe, expect, it } from "vitest";
import { cycles, importGraph, sourceFiles } from "../../scripts/imports.js";

// The import graph of src/ (scripts/imports.ts: as the compiler resolves it, type-only imports
// counted) has no cycle of files.

describe("src/ import graph", () => {
  const graph = importGraph(sourceFiles("src"));

  it("resolves the project's `.js` specifiers to its `.ts` files (else an empty graph would pass)", () => {
    expect(graph.get("src/sync/refresh-kind.ts")).toContain("src/sync/read-plan.ts");
    expect(graph.get("src/sync/refresh-kind.ts")).toContain("src/sync/resources.ts");
  });

  it("keeps the sync engine below the worker and the HTTP edge (they wire it; it never reaches back)", () => {
    const upward = [...graph]
      .filter(([file]) => file.startsWith("src/sync/"))
      .flatMap(([file, targets]) => targets.map((t) => `${file} → ${t}`))
      .filter((edge) => / → src\/(worker|http)\//.test(edge));
    expect(upward).toEqual([]);
  });

  it("has no import cycle", () => {
    expect(cycles(graph)).toEqual([]);
  });

  it("finds a cycle when there is one (else a finder that finds none would pass)", () => {
    const planted = new Map(graph);
    planted.set("src/base/text.ts", [...(graph.get("src/base/text.ts") ?? []), "src/config/config.ts"]);
    planted.set("src/config/config.ts", [...(graph.get("src/config/config.ts") ?? []), "src/base/text.ts"]);
    expect(cycles(planted).some((c) => c.includes("src/base/text.ts") && c.includes("src/config/config.ts"))).toBe(true);
  });
});
