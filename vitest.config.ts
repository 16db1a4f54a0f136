import { readdirSync, readFileSync } from "node:fs";
import { defineConfig } from "vitest/config";

// Chaos, browser and install suites have their own configs (npm run test:chaos, test:browser, test:install).
const exclude = ["test/chaos/**", "test/browser/**", "test/install/**", "node_modules/**"];

// A file that replaces a module (vi.mock) needs a module graph of its own: without isolation a
// module another file already loaded keeps the real import, and the mock would stay for the next
// file. Such files run isolated, without global setup's Redis and PostgreSQL (none uses them).
const testDir = new URL("test/", import.meta.url);
const mocking = readdirSync(testDir, { recursive: true, encoding: "utf8" })
  .filter((f) => f.endsWith(".test.ts") && /\bvi\.(do)?mock\(/.test(readFileSync(new URL(f, testDir), "utf8")))
  .map((f) => `test/${f}`);

const WALKED = "test/e2e/delivery-path.test.ts";

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // Tests mostly wait on Redis, PostgreSQL and HTTP, so more files at once than the 2 cores CI
    // has keep the cores busy; each test makes its own queue prefix, schema and data dir.
    maxWorkers: 4,
    projects: [
      { extends: true, test: { name: "mocking", include: mocking, exclude, isolate: true } },
      // The walk of one delivery counts every function of src/ that runs in its process: a fork of
      // its own, so no timer another file left behind runs code in it.
      { extends: true, test: { name: "walked", include: [WALKED], exclude, isolate: true, globalSetup: ["test/global-setup.ts"] } },
      {
        extends: true,
        test: {
          name: "suite",
          include: ["test/**/*.test.ts"],
          exclude: [...exclude, ...mocking, WALKED],
          globalSetup: ["test/global-setup.ts"],
          // One module graph per worker, not per file: a fresh fork for each file imports BullMQ, Hono,
          // pg, OpenTelemetry and src/ again, a large share of the suite's CPU. Tests keep their state
          // in the services, prefixes and schemas they start, not at module level.
          isolate: false,
        },
      },
    ],
  },
});
