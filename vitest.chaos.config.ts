import { defineConfig } from "vitest/config";

// npm run test:chaos: real processes, faults, load and hostile input; one file at a time so the
// figures are not skewed by another file's load on a 2-core machine.
export default defineConfig({
  test: {
    include: ["test/chaos/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 300_000,
    hookTimeout: 60_000,
    pool: "forks",
    fileParallelism: false,
  },
});
