import { request } from "node:http";
import { afterEach, describe, expect, it, inject } from "vitest";
import { signPayload } from "../../src/events/envelope.js";
import { sampleEvent, TEST_SECRET } from "../helpers/edge.js";
import { runCli, type CliProcess } from "../helpers/cli-process.js";

let proc: CliProcess | undefined;
afterEach(() => {
  if (proc?.child.exitCode === null) proc.child.kill("SIGKILL");
  proc = undefined;
});

const baseEnv = () => ({
  ROLE: "web",
  PORT: "0",
  REDIS_URL: inject("redisUrl"),
  QUEUE_PREFIX: `test-proc-${process.pid}`,
  SIGNING_SECRET: TEST_SECRET,
});

describe("svc-webhooks serve (a real process)", () => {
  it("stops at start with one message naming every wrong variable, echoing no secret", async () => {
    proc = runCli(["serve"], { PORT: "eighty", API_KEY: "sk_wrong_topsecret", API_BASE_URL: "http://127.0.0.1:1" });
    const { code } = await proc.exited;
    expect(code).toBe(2);
    const err = proc.stderr();
    for (const name of ["PORT", "API_KEY", "SIGNING_SECRET"]) expect(err).toContain(name);
    expect(err).not.toContain("topsecret");
  });

  it("stops at start with a PostgreSQL that does not answer: the first error line names DATABASE_URL, nothing says it opened", async () => {
    proc = runCli(["serve"], { ...baseEnv(), ROLE: "worker", DATABASE_URL: "postgres://svc:db-pa55@127.0.0.1:1/svc" });
    const { code } = await proc.exited;
    expect(code).toBe(1);
    const errors = proc.stderr().trim().split("\n");
    expect(errors[0]).toBe(
      "svc-webhooks: PostgreSQL at 127.0.0.1:1/svc does not answer (ECONNREFUSED): is it running, and is DATABASE_URL set to it?",
    );
    expect(proc.stdout()).not.toMatch(/"level":50|database (opened|migrated)/);
    expect(proc.stdout() + proc.stderr()).not.toContain("db-pa55");
  });

  it("finishes an in-flight request on SIGTERM, refuses new ones, and exits 0", async () => {
    proc = runCli(["serve"], baseEnv());
    const url = await proc.listening();
    const body = JSON.stringify(sampleEvent());
    const { port } = new URL(url);

    // Start a request and hold back the end of its body while the signal arrives.
    let answer!: (v: { status: number; body: string }) => void;
    const answered = new Promise<{ status: number; body: string }>((r) => (answer = r));
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method: "POST",
        path: "/webhooks",
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          "x-svc-signature": signPayload(body, TEST_SECRET),
        },
      },
      (res) => {
        let text = "";
        res.on("data", (d: Buffer) => (text += d.toString()));
        res.on("end", () => answer({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.write(body.slice(0, 10));
    await new Promise((r) => req.once("socket", (s) => s.once("connect", r)));

    const shuttingDown = proc.waitForLog("shutting down");
    proc.child.kill("SIGTERM");
    await shuttingDown;
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();

    req.end(body.slice(10));
    expect((await answered).status).toBe(200);
    expect(await proc.exited).toEqual({ code: 0, signal: null });
  });
});
