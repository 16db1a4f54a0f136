import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../../scripts/imports.js";
import { TEST_MAP_FILE, testMapMarkdown } from "../../scripts/test-map.js";

// The map from source files to their tests (issue 56, item 8) is current.
describe("test/README.md", () => {
  it("is the map the tests' imports make (run `npm run test-map` after adding a test or a source file)", async () => {
    const made = await testMapMarkdown();
    expect(readFileSync(join(ROOT, TEST_MAP_FILE), "utf8")).toBe(made);
    // Rows the reader must find: a file and a test that imports it.
    expect(made).toMatch(/\| `src\/sync\/read-plan\.ts` +\| [^\n]*`unit\/read-plan\.test\.ts`/);
  });
});
