import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import { afterAll, describe, expect, inject, it } from "vitest";
import { createDatabase } from "../../src/mirror/database.js";
import { EVENTS_QUEUE } from "../../src/queue/events-queue.js";
import { runCli, type CliProcess } from "../helpers/cli-process.js";
import { inspectQueues } from "../helpers/inspect-queues.js";
import { findPostgresBin, startPostgresServer, type PostgresServer } from "../helpers/postgres-server.js";
import { randomSchema } from "../helpers/postgres.js";
import { waitFor } from "../helpers/wait-for.js";
import { sendAll } from "./retrying-sender.js";

const SECRET = "whsec_chaos_db_away_01ab";
const EVENTS = 3000;
const procs: CliProcess[] = [];
let postgres: PostgresServer | undefined;
afterAll(async () => {
  for (const p of procs) if (p.child.exitCode === null) p.child.kill("SIGKILL");
  await postgres?.destroy();
});

describe("the database goes away while events arrive", () => {
  it("loses no event answered 200: the worker's /readyz turns 503, nothing fails unrecorded, all is recorded handled once it is back", async () => {
    postgres = await startPostgresServer(await findPostgresBin());
    const prefix = `chaos-dbaway-${randomUUID().slice(0, 6)}`;
    const env = {
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: prefix,
      SIGNING_SECRET: SECRET,
      PORT: "0",
      DATABASE_URL: postgres.url,
      DATABASE_SCHEMA: randomSchema(),
      // A failed set of ten: before, what failed unrecorded while the database was away was trimmed from it for good.
      KEEP_FAILED_JOBS: "10",
      JOB_ATTEMPTS: "3",
      JOB_BACKOFF_MS: "50",
      RECONCILE_INTERVAL_SECONDS: "0",
      LOG_LEVEL: "info",
    };
    const worker = runCli(["serve", "--role", "worker"], env);
    procs.push(worker);
    const workerUrl = await worker.listening();
    const web = runCli(["serve", "--role", "web"], env);
    procs.push(web);
    const webUrl = await web.listening();
    const readyz = async () => (await fetch(`${workerUrl}/readyz`)).status;
    expect(await readyz()).toBe(200);

    const events = Array.from({ length: EVENTS }, (_, i) => {
      const id = `evt_dbaway_${i}`;
      return { id, body: JSON.stringify({ id, type: "chaos.database_away", data: { n: i } }) };
    });
    let accepted = 0;
    const sending = sendAll(`${webUrl}/webhooks`, events, SECRET, {
      concurrency: 20,
      deadlineMs: 240_000,
      onAccepted: (n) => {
        accepted = n;
      },
    });
    // Stop PostgreSQL a tenth of the way in, start it again once the worker said it is not ready
    // and a good part of the load arrived while it was away.
    await waitFor(() => accepted >= EVENTS / 10, { what: "a tenth of the events accepted", timeoutMs: 120_000 });
    const stoppedAt = Date.now();
    await postgres.stop();
    const acceptedWhenStopped = accepted;
    await waitFor(async () => (await readyz()) === 503, { what: "the worker's /readyz to answer 503", timeoutMs: 60_000 }).catch(
      (err: unknown) => {
        // Before, the worker crashed on the connection error its pool did not listen for.
        throw new Error(`${String(err)}; worker exit code ${String(worker.child.exitCode)}: ${worker.stderr().slice(0, 400)}`);
      },
    );
    const notReady = (await (await fetch(`${workerUrl}/readyz`)).json()) as { error?: { message: string } };
    await waitFor(() => accepted >= EVENTS / 2, { what: "half the events accepted", timeoutMs: 120_000 });
    await postgres.start();
    const secondsAway = (Date.now() - stoppedAt) / 1000;
    const report = await sending;

    const database = await createDatabase({ url: postgres.url, dataDir: "", schema: env.DATABASE_SCHEMA });
    const inspected = inspectQueues(inject("redisUrl"), prefix, [EVENTS_QUEUE]);
    try {
      const handled = async () =>
        new Set((await sql<{ id: string }>`select id from events where status = 'handled'`.execute(database.db)).rows.map((r) => r.id));
      let logged = new Set<string>();
      await waitFor(
        async () => {
          logged = await handled();
          return [...report.accepted].every((id) => logged.has(id));
        },
        { what: "every accepted event to be recorded handled", timeoutMs: 180_000, intervalMs: 500 },
      );
      const lost = [...report.accepted].filter((id) => !logged.has(id));
      const failedJobs = await inspected.queues[0]!.getFailedCount();
      console.log(
        `CHAOS database-away ${JSON.stringify({
          accepted: report.accepted.size,
          non200: report.non200,
          acceptedWhileStopping: acceptedWhenStopped,
          secondsAway,
          readyzWhileAway: notReady.error?.message,
          handledInLog: logged.size,
          failedJobs,
          lost: lost.length,
        })}`,
      );
      expect(report.accepted.size).toBe(EVENTS);
      expect(lost).toEqual([]);
      expect(failedJobs).toBe(0);
      expect(notReady.error?.message).toMatch(/database/);
      expect(await readyz()).toBe(200);
    } finally {
      await inspected.close();
      await database.close();
    }
  });
});
