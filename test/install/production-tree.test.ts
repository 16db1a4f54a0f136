import { execFileSync, spawn } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, inject, it } from "vitest";
import { signPayload } from "../../src/events/envelope.js";
import { freePort } from "../helpers/redis-server.js";
import { waitFor } from "../helpers/wait-for.js";
import { sampleEvent, TEST_SECRET } from "../helpers/edge.js";

// npm run test:install (a CI step of its own, not npm test): a clean `npm ci` costs a minute or so
// of a 2-core machine and the registry's time, for what changes only with the lockfile or the build.

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const dockerfile = readFileSync(join(ROOT, "Dockerfile"), "utf8");
const cmd = JSON.parse(
  dockerfile
    .split("\n")
    .filter((l) => l.startsWith("CMD "))
    .map((l) => l.slice("CMD ".length).trim())[0]!,
) as string[];

describe("the production tree, built as the Dockerfile builds it", () => {
  it("installs, builds, prunes dev dependencies, and serves with its CMD", { timeout: 240_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-image-"));
    // As in the image, where /app is the code's and the embedded store's server runs as the
    // service's user: under root (CI) it runs as nobody, which must pass through to ./.data.
    chmodSync(dir, 0o755);
    // The build stage's COPY lines, then its RUN lines.
    for (const f of ["package.json", "package-lock.json", "tsconfig.json", "tsconfig.build.json", "src"])
      cpSync(join(ROOT, f), join(dir, f), { recursive: true });
    const npm = (args: string[]) =>
      execFileSync("npm", args, { cwd: dir, stdio: "pipe", env: { ...process.env, npm_config_update_notifier: "false" } });
    npm(["ci", "--no-audit", "--no-fund"]);
    npm(["run", "build"]);
    npm(["prune", "--omit=dev", "--no-audit", "--no-fund"]);
    // (typescript may stay: an optional peer of a production dependency keeps it.)
    for (const dev of ["vitest", "tsx", "express", "playwright-core"]) expect(existsSync(join(dir, "node_modules", dev)), dev).toBe(false);
    expect(existsSync(join(dir, cmd[1]!))).toBe(true);

    const port = await freePort();
    const child = spawn(cmd[0] === "node" ? process.execPath : cmd[0]!, cmd.slice(1), {
      cwd: dir,
      env: {
        PATH: process.env.PATH,
        NODE_ENV: "production",
        HOST: "127.0.0.1",
        PORT: String(port),
        REDIS_URL: inject("redisUrl"),
        QUEUE_PREFIX: `test-image-${port}`,
        SIGNING_SECRET: TEST_SECRET,
        RECONCILE_INTERVAL_SECONDS: "0",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    try {
      const url = `http://127.0.0.1:${port}`;
      await waitFor(async () => (await fetch(`${url}/readyz`)).status === 200, { what: "the built service to be ready" });
      const body = JSON.stringify(sampleEvent());
      const res = await fetch(`${url}/webhooks`, {
        method: "POST",
        body,
        headers: { "content-type": "application/json", "x-svc-signature": signPayload(body, TEST_SECRET) },
      });
      expect(res.status).toBe(200);
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
  });
});
