import { afterEach, describe, expect, inject, it } from "vitest";
import { TEST_SECRET } from "../helpers/edge.js";
import { runCli, type CliProcess } from "../helpers/cli-process.js";
import { randomSchema } from "../helpers/postgres.js";

let proc: CliProcess | undefined;
afterEach(() => {
  if (proc?.child.exitCode === null) proc.child.kill("SIGKILL");
  proc = undefined;
});

const PASSWORD = "50%off-s3cret";

describe("svc-webhooks serve with a password holding a bare %", () => {
  // The run's server trusts loopback, so any password connects: what is tested is that start-up
  // reads the URL as pg does instead of dying with URIError, and never logs the password.
  it.runIf(inject("databaseUrl"))("in DATABASE_URL: starts, migrates and serves, the password in no log line", async () => {
    const url = inject("databaseUrl").replace("postgres://postgres@", `postgres://postgres:${PASSWORD}@`);
    expect(url).toContain(PASSWORD);
    proc = runCli(["serve"], {
      PORT: "0",
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: `test-pct-${process.pid}`,
      SIGNING_SECRET: TEST_SECRET,
      DATABASE_URL: url,
      DATABASE_SCHEMA: randomSchema(),
      RECONCILE_INTERVAL_SECONDS: "0",
      LOG_LEVEL: "debug",
    });
    const base = await proc.listening();
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    proc.child.kill("SIGTERM");
    expect((await proc.exited).code).toBe(0);
    expect(proc.stdout() + proc.stderr()).not.toContain("50%off");
  });

  it("in REDIS_URL: exits 2 with one line naming the variable and the fix, no stack, no password", async () => {
    proc = runCli(["serve"], { PORT: "0", REDIS_URL: `redis://:${PASSWORD}@127.0.0.1:1`, SIGNING_SECRET: TEST_SECRET });
    expect((await proc.exited).code).toBe(2);
    const err = proc.stderr();
    expect(err).toContain("REDIS_URL has a user name or password with a % that is not percent-encoding");
    expect(err).not.toContain("URIError");
    expect(err).not.toContain("50%off");
  });
});
