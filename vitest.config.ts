import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Chaos and browser suites have their own configs (npm run test:chaos, npm run test:browser).
    exclude: ["test/chaos/**", "test/browser/**", "node_modules/**"],
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
  },
});
