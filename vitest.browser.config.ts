import { defineConfig } from "vitest/config";

// npm run test:browser: the dashboard in a real headless Chromium (Debian's `chromium` package).
// Kept out of `npm test`, which needs only Node and redis-server.
export default defineConfig({
  test: {
    include: ["test/browser/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    fileParallelism: false,
  },
});
