import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "kysely";
import { afterEach, describe, expect, inject, it } from "vitest";
import { signPayload } from "../../src/events/envelope.js";
import type { Database } from "../../src/mirror/database.js";
import { createSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { runCli, type CliProcess } from "../helpers/cli-process.js";
import { sampleEvent, TEST_SECRET } from "../helpers/edge.js";
import { openDatabaseOfEnv, randomSchema } from "../helpers/postgres.js";
import { waitFor } from "../helpers/wait-for.js";

// Two worker processes must share one database: only a PostgreSQL server allows that.
const databaseUrl = inject("databaseUrl");
if (!databaseUrl) console.warn("durable-steps-crash: skipped — needs two processes on one database, and this run has no PostgreSQL server");

const procs: CliProcess[] = [];
let sandbox: Sandbox | undefined;
let database: Database | undefined;
afterEach(async () => {
  for (const p of procs.splice(0)) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
  await sandbox?.close();
  sandbox = undefined;
  // The schema stays until the run ends (global setup drops the run's schemas): a drop now could
  // fail another file's migration, whose catalog scan names every schema it sees.
  await database?.close();
  database = undefined;
});

// A user's handlers module (needs nothing from the package): the step creates the booking, and
// on its first run the process kills itself right after the API answered, before the step's
// result is recorded: the crash the narrowing is for.
const HANDLERS = `import { appendFileSync, existsSync, writeFileSync } from "node:fs";
export default {
  "guest.arrived": async (event, ctx) => {
    const booking = await ctx.step("create booking", async () => {
      const created = await ctx.api.createBooking({
        restaurantId: process.env.RESTAURANT_ID,
        date: "2026-12-24",
        time: "19:30",
        partySize: 2,
        diner: { name: "Grace Hopper", email: event.id + "@example.com" },
      });
      if (!existsSync(process.env.CRASH_MARK)) {
        writeFileSync(process.env.CRASH_MARK, created.id);
        process.kill(process.pid, "SIGKILL");
      }
      return created;
    });
    appendFileSync(process.env.SEEN_FILE, JSON.stringify({ pid: process.pid, id: booking.id, code: booking.confirmCode }) + "\\n");
  },
};
`;

describe.skipIf(!databaseUrl)("durable steps: a worker killed between the upstream write and the step's record", () => {
  it("the next worker's run of the step finds the booking the dead one created instead of creating another", async () => {
    sandbox = createSandbox({});
    const apiUrl = await sandbox.listen();
    const dir = mkdtempSync(join(tmpdir(), "svc-steps-crash-"));
    const handlersModule = join(dir, "handlers.mjs");
    writeFileSync(handlersModule, HANDLERS);
    const env = {
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: `test-steps-${randomUUID().slice(0, 8)}`,
      DATABASE_URL: databaseUrl,
      DATABASE_SCHEMA: randomSchema(),
      SIGNING_SECRET: TEST_SECRET,
      API_BASE_URL: apiUrl,
      API_KEY: sandbox.apiKey,
      RECONCILE_INTERVAL_SECONDS: "0",
      // The second worker claims the entry the dead consumer left once it is idle this long.
      INGEST_CLAIM_IDLE_MS: "500",
      JOB_LOCK_MS: "1000",
      HOST: "127.0.0.1",
      PORT: "0",
      LOG_LEVEL: "info",
      HANDLERS_MODULE: handlersModule,
      RESTAURANT_ID: sandbox.state.restaurants()[0]!.id,
      CRASH_MARK: join(dir, "crashed"),
      SEEN_FILE: join(dir, "seen.ndjson"),
    };
    const ev = sampleEvent({ type: "guest.arrived", data: { id: "guest_crash", restaurantId: "rest_1" } });
    const ours = () => sandbox!.state.bookings().filter((b) => b.diner.email === `${ev.id}@example.com`);

    const first = runCli(["serve"], env);
    procs.push(first);
    const url = await first.listening();
    const body = JSON.stringify(ev);
    const res = await fetch(`${url}/webhooks`, {
      method: "POST",
      body,
      headers: { "content-type": "application/json", "x-svc-signature": signPayload(body, TEST_SECRET) },
    });
    expect(res.status).toBe(200);
    expect((await first.exited).signal).toBe("SIGKILL");
    // The booking exists upstream; the step holds no result for it.
    const created = readFileSync(env.CRASH_MARK, "utf8");
    expect(ours().map((b) => b.id)).toEqual([created]);
    database = await openDatabaseOfEnv(env);
    const { rows: left } = await sql<{ status: string; result: unknown }>`select status, result from steps`.execute(database.db);
    expect(left).toEqual([{ status: "started", result: null }]);
    expect(existsSync(env.SEEN_FILE)).toBe(false);

    const second = runCli(["serve", "--role", "worker"], env);
    procs.push(second);
    // Whole lines only: the file can be read between appendFileSync's open and the end of its write.
    const wholeLines = () => {
      const text = existsSync(env.SEEN_FILE) ? readFileSync(env.SEEN_FILE, "utf8") : "";
      return text.endsWith("\n") && text;
    };
    const seen = await waitFor(wholeLines, { timeoutMs: 30_000, what: "the second worker to finish the event" });
    const [line, ...more] = seen.trim().split("\n");
    expect(more).toEqual([]);
    expect(JSON.parse(line!)).toMatchObject({ pid: second.child.pid, id: created });
    await second.waitForLog("found the booking an earlier run of this step created; not creating another");
    // Still one booking upstream, and the step now holds it: a run after the crash, recorded.
    expect(ours().map((b) => b.id)).toEqual([created]);
    const { rows } = await sql<{ status: string; runs: number; id: string }>`
      select status, runs, result ->> 'id' as id from steps`.execute(database.db);
    expect(rows).toEqual([{ status: "done", runs: 2, id: created }]);
    second.child.kill("SIGTERM");
    expect((await second.exited).code).toBe(0);
  }, 120_000);
});
