import { defineConfig } from "vitest/config";

// npm run test:install: the production tree built as the Dockerfile builds it (npm ci, build,
// prune, serve). Kept out of `npm test`: a clean install is slow and changes only with the lockfile.
export default defineConfig({
  test: {
    include: ["test/install/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 300_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
