import { afterEach, describe, expect, inject, it } from "vitest";
import { createEventLog } from "../../src/mirror/event-log.js";
import { migrateToLatest } from "../../src/mirror/database.js";
import { runCli, type CliProcess } from "../helpers/cli-process.js";
import { sampleEvent } from "../helpers/edge.js";
import { nextJob } from "../helpers/job-events.js";
import { databaseEnv, openDatabaseOfEnv } from "../helpers/postgres.js";
import { startService, type TestService } from "../helpers/service.js";
import { moduleHandlers } from "../helpers/module-handlers.js";

let svc: TestService | undefined;
let proc: CliProcess | undefined;
afterEach(async () => {
  await svc?.stop();
  if (proc?.child.exitCode === null) proc.child.kill("SIGKILL");
  svc = proc = undefined;
});

// Clear the screen, set the window title, ring the bell, and reorder text (Trojan Source).
const HOSTILE = "\u001b[2J\u001b]0;owned\u0007\u009b31m\u202eevil";
const ESCAPED = "\\x1b[2J\\x1b]0;owned\\x07\\x9b31m\\u202eevil";
// eslint-disable-next-line no-control-regex
const TERMINAL_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe("replay prints what senders and handlers wrote with its control characters escaped", () => {
  it("in `replay list`: one line per failed job, the failure reason spelled out", async () => {
    svc = await startService({ JOB_ATTEMPTS: "1" }, [
      moduleHandlers({
        "guest.visited": () => {
          throw new Error(`no guest named ${HOSTILE}\nsecond line\\`);
        },
      }),
    ]);
    const ev = sampleEvent({ type: "guest.visited", data: {} });
    const failed = nextJob(svc.service.worker!.eventWorker, "failed", (j) => j.data.id === ev.id);
    expect((await svc.deliver(ev)).status).toBe(200);
    await failed;
    proc = runCli(["replay", "list"], { REDIS_URL: inject("redisUrl"), QUEUE_PREFIX: svc.prefix, ROLE: "worker" });
    expect((await proc.exited).code).toBe(0);
    const out = proc.stdout();
    expect(out).not.toMatch(TERMINAL_CONTROL);
    const lines = out.split("\n").filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(ev.id);
    expect(lines[0]).toContain(`no guest named ${ESCAPED}\\x0asecond line\\\\`);
  });

  it("in `replay --dry-run`: event ids and types from the log", async () => {
    const env = databaseEnv();
    const database = await openDatabaseOfEnv(env);
    try {
      await migrateToLatest(database);
      // Written straight to the log (the edge refuses such ids now; an older log may hold them).
      await createEventLog(database.db).recordAttempt({
        id: `evt_${HOSTILE}`,
        type: `order.${HOSTILE}`,
        payload: {},
        status: "failed",
        handlers: {},
      });
    } finally {
      await database.close();
    }
    proc = runCli(["replay", "--dry-run", "--status", "failed"], { ...env, REDIS_URL: inject("redisUrl") });
    expect((await proc.exited).code).toBe(0);
    const out = proc.stdout();
    expect(out).not.toMatch(TERMINAL_CONTROL);
    expect(out).toContain(`evt_${ESCAPED}\torder.${ESCAPED}\tfailed\t`);
    expect(out).toContain("1 event would be replayed");
  });
});
